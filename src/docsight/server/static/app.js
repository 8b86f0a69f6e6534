// docsight's web page: plain JavaScript over the REST API under /api/v1 (no framework, no
// build step, nothing loaded from elsewhere).
//
// Safety rule for the whole file: text that comes from the server (document names, passages,
// answers, error messages) is only ever put into the page as text nodes (`textContent`, or
// the `el` helper below). Nothing here assigns `innerHTML`; the answer's Markdown is parsed by
// `renderMarkdown`, which builds the few elements it knows about and escapes everything else.
"use strict";

(() => {
  const API = document.body.dataset.api || "/api/v1";
  const KEY_STORE = "docsight.apiKey";
  const $ = (selector) => document.querySelector(selector);

  // ---------------------------------------------------------------------------------------
  // Small helpers

  /** An element with attributes and children; strings become text nodes (never HTML). */
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (name === "class") node.className = value;
      else if (name === "text") node.textContent = value;
      else if (name.startsWith("data-")) node.dataset[camel(name.slice(5))] = value;
      else node.setAttribute(name, value === true ? "" : String(value));
    }
    for (const child of children.flat()) {
      if (child === undefined || child === null || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function camel(name) {
    return name.replace(/-([a-z])/g, (_, c) => c.toUpperCase());
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
  }

  function show(node, visible) {
    node.hidden = !visible;
  }

  function enc(part) {
    return encodeURIComponent(part);
  }

  function baseName(path) {
    return String(path || "").split(/[\\/]/).pop();
  }

  function clip(text, limit) {
    const s = String(text || "");
    return s.length > limit ? s.slice(0, limit - 1) + "…" : s;
  }

  /** A citation's or hit's box as [x0, y0, x1, y1] (the API may send a list or an object). */
  function boxOf(bbox) {
    if (!bbox) return null;
    const box = Array.isArray(bbox) ? bbox : [bbox.x0, bbox.y0, bbox.x1, bbox.y1];
    return box.length === 4 && box.every((v) => Number.isFinite(Number(v))) ? box.map(Number) : null;
  }

  function pageLabel(docName, page, sectionPath) {
    let label = `${docName}, page ${Number(page) + 1}`;
    if (sectionPath && sectionPath.length) label += `, ${sectionPath.join(" › ")}`;
    return label;
  }

  function notice(message) {
    const box = $("#notice");
    box.textContent = message || "";
    show(box, Boolean(message));
  }

  // ---------------------------------------------------------------------------------------
  // API access: JSON requests, server-sent events over fetch (so the bearer key can be sent,
  // which EventSource cannot do), and the API key kept for this browser tab only.

  class ApiError extends Error {
    constructor(status, code, message) {
      super(message);
      this.status = status;
      this.code = code;
    }
  }

  function apiKey() {
    return sessionStorage.getItem(KEY_STORE) || "";
  }

  function authHeaders(extra) {
    const headers = Object.assign({}, extra || {});
    const key = apiKey();
    if (key) headers.Authorization = `Bearer ${key}`;
    return headers;
  }

  async function errorFrom(response) {
    let code = `http_${response.status}`;
    let message = response.statusText || `HTTP ${response.status}`;
    try {
      const body = await response.json();
      if (body && body.error) {
        code = body.error.code || code;
        message = body.error.message || message;
      }
    } catch (_) {
      // Not JSON (a proxy's page, say): keep the status line.
    }
    return failure(response.status, code, message);
  }

  function failure(status, code, message) {
    if (status === 401 || status === 403) askForKey(message);
    return new ApiError(status, code, message);
  }

  async function api(method, path, body) {
    const init = { method, headers: authHeaders({ Accept: "application/json" }) };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const response = await fetch(API + path, init);
    if (!response.ok) throw await errorFrom(response);
    return response.status === 204 ? null : response.json();
  }

  /** Reads a server-sent event stream; `onEvent(name, data)` gets each event's parsed JSON. */
  async function stream(method, path, body, onEvent) {
    const init = { method, headers: authHeaders({ Accept: "text/event-stream" }) };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const response = await fetch(API + path, init);
    if (!response.ok) throw await errorFrom(response);
    const type = response.headers.get("Content-Type") || "";
    if (!type.startsWith("text/event-stream")) {
      // A server that answered with plain JSON: treat it as the final event.
      onEvent("answer", await response.json());
      return;
    }
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        dispatch(buffer.slice(0, cut), onEvent);
        buffer = buffer.slice(cut + 2);
      }
    }
    if (buffer.trim()) dispatch(buffer, onEvent);
  }

  function dispatch(block, onEvent) {
    let name = "message";
    const data = [];
    for (const line of block.split("\n")) {
      if (!line || line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "event") name = value;
      else if (field === "data") data.push(value);
    }
    if (!data.length) return;
    let parsed;
    try {
      parsed = JSON.parse(data.join("\n"));
    } catch (_) {
      parsed = data.join("\n");
    }
    onEvent(name, parsed);
  }

  function askForKey(message) {
    show($("#auth"), true);
    $("#auth-status").textContent = message || "This server needs an API key.";
    $("#api-key").focus();
  }

  function setUpAuth() {
    const form = $("#auth");
    if (apiKey()) {
      show(form, true);
      $("#api-key").value = apiKey();
    }
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const key = $("#api-key").value.trim();
      if (key) sessionStorage.setItem(KEY_STORE, key);
      else sessionStorage.removeItem(KEY_STORE);
      $("#auth-status").textContent = key ? "Key set for this tab." : "Key cleared.";
      loadDocuments();
    });
  }

  // ---------------------------------------------------------------------------------------
  // Documents: the stored ones from the API, plus the files of running ingestion jobs.

  const documents = new Map(); // name -> DocumentInfo
  const pending = new Map(); // file name -> stage shown while its job runs
  const selected = new Set(); // names ticked to restrict search and ask

  async function loadDocuments() {
    try {
      let list = [];
      try {
        list = (await api("GET", "/documents")).documents || [];
      } catch (error) {
        // A server started on a new collection directory: nothing is stored until the first
        // upload creates it, which is an empty list to the reader, not an error.
        if (error.code !== "collection_not_found") throw error;
      }
      notice("");
      documents.clear();
      for (const info of list) documents.set(info.name, info);
      for (const name of [...selected]) if (!documents.has(name)) selected.delete(name);
      renderDocuments();
    } catch (error) {
      notice(`Could not list documents: ${error.message}`);
    }
  }

  function renderDocuments() {
    const body = $("#documents tbody");
    clear(body);
    const names = [...documents.keys()].sort((a, b) => a.localeCompare(b));
    for (const name of names) {
      const info = documents.get(name);
      const stage = pending.get(name);
      const check = el("input", { type: "checkbox", class: "doc-select", value: name, title: "Use in search and ask" });
      check.checked = selected.has(name);
      check.addEventListener("change", () => {
        if (check.checked) selected.add(name);
        else selected.delete(name);
      });
      const mapButton = el("button", { type: "button", class: "link doc-map", text: "map" });
      mapButton.addEventListener("click", () => showMap(name));
      const deleteButton = el("button", { type: "button", class: "link danger doc-delete", text: "delete" });
      deleteButton.addEventListener("click", () => removeDocument(name));
      body.append(
        el(
          "tr",
          { "data-name": name, class: "doc-row" },
          el("td", {}, check),
          el("td", { class: "doc-name", title: info.title || name }, name),
          el("td", { class: "num" }, String(info.pages)),
          el("td", { class: stage ? "status busy" : "status ready" }, stage || "ready"),
          el("td", { class: "actions" }, mapButton, " ", deleteButton),
        ),
      );
    }
    for (const [name, stage] of pending) {
      if (documents.has(name)) continue;
      body.append(
        el(
          "tr",
          { "data-name": name, class: "doc-row pending" },
          el("td"),
          el("td", { class: "doc-name" }, name),
          el("td", { class: "num" }, ""),
          el("td", { class: "status busy" }, stage),
          el("td"),
        ),
      );
    }
    show($("#documents-empty"), body.children.length === 0);
  }

  async function removeDocument(name) {
    if (!window.confirm(`Delete ${name} from the collection?`)) return;
    try {
      await api("DELETE", `/documents/${enc(name)}`);
      selected.delete(name);
      if ($("#map-view").dataset.name === name) show($("#map-view"), false);
      await loadDocuments();
    } catch (error) {
      notice(`Could not delete ${name}: ${error.message}`);
    }
  }

  // ---------------------------------------------------------------------------------------
  // Upload: the bytes' progress from XMLHttpRequest, then the job's progress from its events.

  function setProgress(fraction, text) {
    show($("#upload-progress-box"), true);
    const bar = $("#upload-progress");
    if (fraction === null) bar.removeAttribute("value");
    else bar.value = Math.max(0, Math.min(100, Math.round(fraction * 100)));
    $("#upload-status").textContent = text;
  }

  function upload(files) {
    return new Promise((resolve, reject) => {
      const form = new FormData();
      for (const file of files) form.append("files", file, file.name);
      const xhr = new XMLHttpRequest();
      xhr.open("POST", `${API}/documents`);
      const key = apiKey();
      if (key) xhr.setRequestHeader("Authorization", `Bearer ${key}`);
      xhr.setRequestHeader("Accept", "application/json");
      xhr.upload.addEventListener("progress", (event) => {
        if (event.lengthComputable) {
          const share = event.loaded / event.total;
          setProgress(share, `Uploading… ${Math.round(share * 100)}%`);
        }
      });
      xhr.addEventListener("load", () => {
        let body = null;
        try {
          body = JSON.parse(xhr.responseText);
        } catch (_) {
          // handled below
        }
        if (xhr.status >= 200 && xhr.status < 300 && body && body.job) resolve(body);
        else {
          const error = (body && body.error) || {};
          reject(failure(xhr.status, error.code || `http_${xhr.status}`, error.message || xhr.statusText || "upload failed"));
        }
      });
      xhr.addEventListener("error", () => reject(new ApiError(0, "network", "the upload did not reach the server")));
      xhr.send(form);
    });
  }

  async function onUpload(event) {
    event.preventDefault();
    const input = $("#file-input");
    const files = [...input.files];
    if (!files.length) {
      notice("Choose one or more files first.");
      return;
    }
    notice("");
    const button = $("#upload-button");
    button.disabled = true;
    clear($("#upload-report"));
    setProgress(0, "Uploading…");
    try {
      const created = await upload(files);
      for (const name of created.files || []) pending.set(name, "queued");
      renderDocuments();
      setProgress(null, "Queued for ingestion…");
      const job = await followJob(created.job);
      showReport(job);
      input.value = "";
    } catch (error) {
      setProgress(0, `Failed: ${error.message}`);
    } finally {
      pending.clear();
      button.disabled = false;
      await loadDocuments();
    }
  }

  /** The job's final JSON, following its events (or polling when the stream breaks). */
  async function followJob(id) {
    let final = null;
    try {
      await stream("GET", `/jobs/${enc(id)}/events`, undefined, (name, data) => {
        if (name === "progress") onProgress(data);
        else if (name === "done") final = data;
        else if (name === "error") throw new ApiError(0, data.code || "error", data.message || "job failed");
      });
    } catch (error) {
      if (error instanceof ApiError && error.status !== 0 && error.status !== 404) throw error;
    }
    while (!final || !["done", "failed"].includes(final.status)) {
      if (final) await new Promise((resolve) => setTimeout(resolve, 1000));
      final = await api("GET", `/jobs/${enc(id)}`);
      if (final.progress) onProgress(final.progress);
    }
    return final;
  }

  function onProgress(p) {
    const file = baseName(p.file);
    let text = `${file}: ${p.stage}`;
    if (p.pages) text += `, page ${p.page} of ${p.pages}`;
    if (p.total > 1) text += ` (file ${p.index} of ${p.total})`;
    let fraction = null;
    if (p.batch_pages) fraction = p.batch_pages_done / p.batch_pages;
    else if (p.total) fraction = (p.index - 1) / p.total;
    setProgress(fraction, `Ingesting ${text}`);
    if (file) {
      pending.set(file, p.stage === "done" ? "stored" : p.stage);
      renderDocuments();
    }
    // A finished file is searchable now: list it without waiting for the whole batch.
    if (p.stage === "done") loadDocuments();
  }

  function showReport(job) {
    const list = $("#upload-report");
    clear(list);
    const files = (job.report && job.report.files) || [];
    for (const outcome of files) {
      let text = `${outcome.name}: ${outcome.status}`;
      if (outcome.pages) text += `, ${outcome.pages} page${outcome.pages === 1 ? "" : "s"}`;
      if (outcome.reason) text += ` (${outcome.reason})`;
      list.append(el("li", { class: `outcome ${outcome.status}` }, text));
    }
    if (job.status === "failed") {
      const error = job.error || {};
      setProgress(0, `Ingestion failed: ${error.message || error.code || "unknown error"}`);
    } else {
      const added = files.filter((f) => f.status === "added").length;
      setProgress(1, `Done: ${added} of ${files.length} file(s) added.`);
    }
  }

  // ---------------------------------------------------------------------------------------
  // Document map

  async function showMap(name) {
    const view = $("#map-view");
    view.dataset.name = name;
    $("#map-title").textContent = name;
    const body = $("#map-body");
    clear(body);
    body.append(el("p", { class: "muted" }, "Loading…"));
    show(view, true);
    try {
      const data = await api("GET", `/documents/${enc(name)}`);
      renderMap(body, data.document || {}, data.map || {});
    } catch (error) {
      clear(body);
      body.append(el("p", { class: "error" }, error.message));
    }
    view.scrollIntoView({ block: "nearest" });
  }

  function renderMap(body, info, map) {
    clear(body);
    const docName = info.name || map.name;
    const pages = Number(map.pages || info.pages || 0);
    const facts = [`${pages} page${pages === 1 ? "" : "s"}`];
    if (map.layout) facts.push(`${map.layout} layout`);
    if (info.chunks !== undefined) facts.push(`${info.chunks} chunks`);
    if (info.parser) facts.push(info.parser);
    if (map.title) body.append(el("p", { class: "map-doc-title" }, map.title));
    body.append(el("p", { class: "muted small" }, facts.join(" · ")));

    const strip = el("div", { class: "page-strip" }, "Pages: ");
    for (let page = 0; page < Math.min(pages, 300); page += 1) {
      strip.append(pageButton(docName, page, String(page + 1)), " ");
    }
    body.append(strip);

    const tree = el("ul", { class: "map-tree" });
    const front = map.front_matter;
    if (front && (Object.keys(front.elements || {}).length || (front.artifacts || []).length)) {
      tree.append(sectionItem(docName, Object.assign({}, front, { title: "(before the first heading)" })));
    }
    for (const section of map.sections || []) tree.append(sectionItem(docName, section));
    body.append(tree);

    const references = map.references || [];
    if (references.length) {
      const list = el("ul", { class: "map-references" });
      for (const ref of references.slice(0, 50)) {
        list.append(el("li", {}, `p. ${Number(ref.from_page) + 1}: “${clip(ref.text, 80)}” → ${ref.to}`));
      }
      body.append(el("details", {}, el("summary", {}, `${references.length} references`), list));
    }
    const hidden = map.hidden || [];
    if (hidden.length) {
      const list = el("ul", { class: "map-hidden" });
      for (const item of hidden.slice(0, 50)) {
        list.append(el("li", {}, `p. ${item.page + 1} (${(item.reasons || []).join(", ")}): `, el("q", {}, clip(item.text, 160))));
      }
      body.append(el("details", {}, el("summary", {}, `${hidden.length} hidden elements (kept out of search)`), list));
    }
  }

  function pageButton(docName, page, label, box) {
    const button = el("button", { type: "button", class: "link page-link", "data-page": String(page) }, label);
    button.addEventListener("click", () => openPage(docName, page, box ? [box] : [], null));
    return button;
  }

  function sectionItem(docName, section) {
    const counts = Object.entries(section.elements || {})
      .map(([kind, n]) => `${n} ${kind}`)
      .join(", ");
    const range = section.pages && section.pages.length
      ? section.pages[0] === section.pages[1]
        ? `p. ${section.pages[0] + 1}`
        : `pp. ${section.pages[0] + 1}–${section.pages[1] + 1}`
      : "";
    const item = el(
      "li",
      { class: "map-section" },
      pageButton(docName, section.page || 0, section.title || "(untitled)"),
      " ",
      el("span", { class: "muted small" }, [range, counts].filter(Boolean).join(" · ")),
    );
    const artifacts = section.artifacts || [];
    if (artifacts.length) {
      const list = el("ul", { class: "map-artifacts" });
      for (const artifact of artifacts) {
        list.append(
          el(
            "li",
            {},
            pageButton(docName, artifact.page, `${artifact.kind}, p. ${artifact.page + 1}`),
            artifact.caption ? ` ${clip(artifact.caption, 120)}` : "",
          ),
        );
      }
      item.append(list);
    }
    const children = section.children || [];
    if (children.length) {
      const list = el("ul");
      for (const child of children) list.append(sectionItem(docName, child));
      item.append(list);
    }
    return item;
  }

  // ---------------------------------------------------------------------------------------
  // Page view: the rendered page with the cited boxes drawn by the server.

  const pageState = { doc: null, page: 0 };
  let pageObjectUrl = null;

  function pageUrl(docName, page, boxes) {
    let url = `${API}/documents/${enc(docName)}/pages/${page}.png`;
    const parts = (boxes || []).map(boxOf).filter(Boolean);
    if (parts.length) {
      const value = parts.map((box) => box.map((v) => String(Math.round(v * 1e5) / 1e5)).join(",")).join(";");
      url += `?highlight=${enc(value)}`;
    }
    return url;
  }

  async function openPage(docName, page, boxes, quote) {
    pageState.doc = docName;
    pageState.page = Number(page);
    const view = $("#page-view");
    const image = $("#page-image");
    const url = pageUrl(docName, pageState.page, boxes);
    $("#page-view-title").textContent = pageLabel(docName, pageState.page);
    const quoteBox = $("#page-view-quote");
    quoteBox.textContent = quote || "";
    show(quoteBox, Boolean(quote));
    const info = documents.get(docName);
    $("#page-prev").disabled = pageState.page <= 0;
    $("#page-next").disabled = Boolean(info) && pageState.page >= info.pages - 1;
    image.alt = `Page ${pageState.page + 1} of ${docName}`;
    show(view, true);
    document.body.classList.add("page-open");
    if (pageObjectUrl) {
      URL.revokeObjectURL(pageObjectUrl);
      pageObjectUrl = null;
    }
    if (!apiKey()) {
      image.src = url;
      return;
    }
    // An <img> cannot send the bearer key: fetch the image and show it from a blob URL.
    image.dataset.src = url;
    try {
      const response = await fetch(url, { headers: authHeaders() });
      if (!response.ok) throw await errorFrom(response);
      pageObjectUrl = URL.createObjectURL(await response.blob());
      image.src = pageObjectUrl;
    } catch (error) {
      $("#page-view-title").textContent = `${pageLabel(docName, pageState.page)}: ${error.message}`;
    }
  }

  function closePage() {
    show($("#page-view"), false);
    document.body.classList.remove("page-open");
  }

  function setUpPageView() {
    $("#page-close").addEventListener("click", closePage);
    $("#page-prev").addEventListener("click", () => openPage(pageState.doc, pageState.page - 1, [], null));
    $("#page-next").addEventListener("click", () => openPage(pageState.doc, pageState.page + 1, [], null));
    $("#page-image").addEventListener("error", () => {
      if (!$("#page-image").getAttribute("src")) return;
      $("#page-view-title").textContent = `${pageLabel(pageState.doc, pageState.page)}: no image for this page`;
    });
    document.addEventListener("keydown", (event) => {
      if (event.key === "Escape") closePage();
    });
  }

  // ---------------------------------------------------------------------------------------
  // Search

  async function onSearch(event) {
    event.preventDefault();
    const query = $("#query").value.trim();
    if (!query) return;
    const results = $("#search-results");
    clear(results);
    $("#search-button").disabled = true;
    try {
      const body = { query, k: 10, unit: $("#search-unit").value };
      if (selected.size) body.documents = [...selected];
      const data = await api("POST", "/search", body);
      const hits = data.hits || [];
      if (!hits.length) results.append(el("li", { class: "muted" }, "No results."));
      for (const hit of hits) {
        const open = el("button", { type: "button", class: "link hit-open" }, pageLabel(hit.doc_name, hit.page, hit.section_path));
        open.addEventListener("click", () => openPage(hit.doc_name, hit.page, hit.bbox ? [hit.bbox] : [], null));
        results.append(
          el(
            "li",
            { class: "hit" },
            el("div", { class: "hit-head" }, open, " ", el("span", { class: "muted small" }, `${hit.kind} · score ${Number(hit.score).toFixed(3)}`)),
            el("div", { class: "hit-text" }, clip(hit.text, 600)),
          ),
        );
      }
    } catch (error) {
      results.append(el("li", { class: "error" }, error.message));
    } finally {
      $("#search-button").disabled = false;
    }
  }

  // ---------------------------------------------------------------------------------------
  // Ask

  let lastSession = null;
  let current = { citations: new Map(), sources: new Map() };

  function readBase64(file) {
    return new Promise((resolve, reject) => {
      const reader = new FileReader();
      reader.addEventListener("load", () => {
        const url = String(reader.result);
        resolve(url.slice(url.indexOf(",") + 1));
      });
      reader.addEventListener("error", () => reject(new ApiError(0, "image", "the image could not be read")));
      reader.readAsDataURL(file);
    });
  }

  function setUpImagePreview() {
    const input = $("#ask-image");
    const preview = $("#ask-image-preview");
    let url = null;
    input.addEventListener("change", () => {
      if (url) URL.revokeObjectURL(url);
      const file = input.files[0];
      url = file ? URL.createObjectURL(file) : null;
      if (url) preview.src = url;
      else preview.removeAttribute("src");
      show(preview, Boolean(url));
    });
  }

  async function onAsk(event) {
    event.preventDefault();
    const question = $("#question").value.trim();
    if (!question) return;
    const button = $("#ask-button");
    const status = $("#ask-status");
    button.disabled = true;
    status.textContent = "Searching…";
    try {
      resetAnswer();
      const body = { question, stream: true };
      if (selected.size) body.documents = [...selected];
      if ($("#mode").value) body.mode = $("#mode").value;
      if ($("#follow-up").checked) body.session = lastSession || "new";
      const image = $("#ask-image").files[0];
      if (image) body.image_base64 = await readBase64(image);
      let answered = false;
      let partial = "";
      let draft = 0;
      await stream("POST", "/ask", body, (name, data) => {
        if (name === "step") {
          addTraceStep(data);
          status.textContent = `Working: ${data.kind}…`;
        } else if (name === "token") {
          // Streamed words, shown as plain text until the final, cited answer replaces them.
          // A new draft (the agent answering again after reading more) starts over.
          if (data.draft !== draft) {
            draft = data.draft;
            partial = "";
          }
          partial += typeof data === "string" ? data : data.text || "";
          show($("#answer-card"), true);
          $("#answer").textContent = partial;
        } else if (name === "answer") {
          answered = true;
          renderAnswer(data);
        } else if (name === "error") {
          throw new ApiError(0, data.code || "error", data.message || "answering failed");
        }
      });
      status.textContent = answered ? "" : "No answer came back.";
    } catch (error) {
      status.textContent = `Error: ${error.message}`;
      status.classList.add("error");
    } finally {
      button.disabled = false;
    }
  }

  function resetAnswer() {
    $("#ask-status").classList.remove("error");
    clear($("#answer"));
    clear($("#sources"));
    clear($("#trace-steps"));
    clear($("#answer-warnings"));
    $("#answer-meta").textContent = "";
    $("#trace-count").textContent = "0";
    show($("#trace"), false);
    show($("#answer-explanation"), false);
    show($("#answer-standalone"), false);
    current = { citations: new Map(), sources: new Map() };
  }

  function addTraceStep(step) {
    const list = $("#trace-steps");
    const pages = (step.pages || []).map((p) => (Array.isArray(p) ? `${p[0]} p. ${Number(p[1]) + 1}` : String(p)));
    const facts = [step.by, step.seconds !== undefined ? `${Number(step.seconds).toFixed(2)} s` : null];
    if (step.tokens) facts.push(`${step.tokens} tokens`);
    list.append(
      el(
        "li",
        { class: "trace-step" },
        el("strong", {}, step.kind || "step"),
        step.input ? ` ${clip(step.input, 200)}` : "",
        step.output ? el("div", { class: "trace-output" }, `→ ${clip(step.output, 300)}`) : null,
        pages.length ? el("div", { class: "muted small" }, `pages: ${clip(pages.join(", "), 300)}`) : null,
        el("div", { class: "muted small" }, facts.filter(Boolean).join(" · ")),
      ),
    );
    $("#trace-count").textContent = String(list.children.length);
    show($("#trace"), true);
  }

  function renderAnswer(answer) {
    show($("#answer-card"), true);
    lastSession = answer.session || lastSession;
    current = { citations: new Map(), sources: new Map() };
    for (const c of answer.citations || []) current.citations.set(Number(c.n), c);
    for (const s of answer.sources || []) current.sources.set(Number(s.n), s);

    const meta = [answer.mode === "llm" ? `written by ${answer.model || "a model"}` : "extractive", answer.strategy];
    if (answer.evidence !== undefined) meta.push(`evidence ${Number(answer.evidence).toFixed(2)}`);
    if (answer.confidence !== null && answer.confidence !== undefined) meta.push(`confidence ${Number(answer.confidence).toFixed(2)}`);
    $("#answer-meta").textContent = `(${meta.filter(Boolean).join(" · ")})`;

    const box = $("#answer");
    clear(box);
    renderMarkdown(answer.answer || "", box, (n) => current.citations.has(n));
    box.classList.toggle("unanswerable", answer.answerable === false);

    // A follow-up rewritten to stand alone: show what was actually searched.
    const standalone = $("#answer-standalone");
    standalone.textContent = answer.standalone ? `Searched as: ${answer.standalone}` : "";
    show(standalone, Boolean(answer.standalone));

    const explanation = $("#answer-explanation");
    explanation.textContent = answer.explanation || "";
    show(explanation, Boolean(answer.explanation));
    const warnings = $("#answer-warnings");
    for (const warning of answer.warnings || []) warnings.append(el("li", {}, warning));

    const sources = $("#sources");
    clear(sources);
    for (const source of answer.sources || []) {
      const cited = current.citations.has(Number(source.n));
      const open = el(
        "button",
        { type: "button", class: "link source-open", title: pageLabel(source.doc_name, source.page) },
        el("span", { class: "source-n" }, `[${source.n}]`),
        ` p. ${Number(source.page) + 1} · ${source.doc_name}`,
      );
      open.addEventListener("click", () => openCitation(Number(source.n)));
      const section = (source.section_path || []).join(" › ");
      sources.append(
        el(
          "li",
          { id: `source-${source.n}`, class: cited ? "source cited" : "source" },
          open,
          section ? el("div", { class: "source-section muted small" }, section) : null,
          el("div", { class: "source-text" }, clip(source.text, 700)),
        ),
      );
    }

    if (Array.isArray(answer.trace)) {
      clear($("#trace-steps"));
      for (const step of answer.trace) addTraceStep(step);
      $("#trace-count").textContent = String(answer.trace.length);
      show($("#trace"), answer.trace.length > 0);
    }
  }

  function openCitation(n) {
    const citation = current.citations.get(n);
    const source = current.sources.get(n);
    const where = citation || source;
    if (!where) return;
    for (const item of document.querySelectorAll("#sources .source.active")) item.classList.remove("active");
    const item = document.getElementById(`source-${n}`);
    if (item) item.classList.add("active");
    const quote = citation && citation.quote ? citation.quote : null;
    openPage(where.doc_name, where.page, where.bbox ? [where.bbox] : [], quote);
  }

  // ---------------------------------------------------------------------------------------
  // Minimal, safe Markdown: paragraphs, headings, lists, block quotes, tables, code, bold,
  // italics and [n] citation markers. Every piece of text becomes a text node; the only
  // elements are the ones created here, with no attributes taken from the text.

  function renderMarkdown(markdown, container, isCitation) {
    const lines = String(markdown).replace(/\r\n?/g, "\n").split("\n");
    renderBlocks(lines, container, isCitation);
  }

  const LIST_ITEM = /^\s{0,3}([-*+]|\d{1,9}[.)])\s+(.*)$/;
  const FENCE = /^\s{0,3}(```|~~~)/;
  const HEADING = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
  const QUOTE = /^\s{0,3}>\s?(.*)$/;
  const TABLE_RULE = /^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$/;

  function startsBlock(line) {
    return FENCE.test(line) || HEADING.test(line) || QUOTE.test(line) || LIST_ITEM.test(line);
  }

  function renderBlocks(lines, container, isCitation) {
    let i = 0;
    while (i < lines.length) {
      const line = lines[i];
      if (!line.trim()) {
        i += 1;
        continue;
      }
      if (FENCE.test(line)) {
        const fence = line.trim().slice(0, 3);
        const body = [];
        i += 1;
        while (i < lines.length && !lines[i].trim().startsWith(fence)) body.push(lines[i++]);
        i += 1;
        container.append(el("pre", {}, el("code", {}, body.join("\n"))));
        continue;
      }
      const heading = HEADING.exec(line);
      if (heading) {
        const level = Math.min(6, heading[1].length + 2);
        container.append(inline(el(`h${level}`), heading[2], isCitation));
        i += 1;
        continue;
      }
      if (QUOTE.test(line)) {
        const inner = [];
        while (i < lines.length && QUOTE.test(lines[i])) inner.push(QUOTE.exec(lines[i++])[1]);
        const quote = el("blockquote");
        renderBlocks(inner, quote, isCitation);
        container.append(quote);
        continue;
      }
      if (line.trim().startsWith("|") && i + 1 < lines.length && TABLE_RULE.test(lines[i + 1])) {
        const rows = [line];
        i += 2;
        while (i < lines.length && lines[i].trim().startsWith("|")) rows.push(lines[i++]);
        container.append(table(rows, isCitation));
        continue;
      }
      const item = LIST_ITEM.exec(line);
      if (item) {
        const ordered = /\d/.test(item[1]);
        const list = el(ordered ? "ol" : "ul");
        if (ordered && parseInt(item[1], 10) !== 1) list.setAttribute("start", String(parseInt(item[1], 10)));
        const items = []; // the text of each item, continuation lines joined
        while (i < lines.length) {
          const next = LIST_ITEM.exec(lines[i]);
          if (next && /\d/.test(next[1]) === ordered) items.push([next[2]]);
          else if (items.length && lines[i].trim() && /^\s+/.test(lines[i])) items[items.length - 1].push(lines[i].trim());
          else break;
          i += 1;
        }
        for (const pieces of items) list.append(inline(el("li"), pieces.join(" "), isCitation));
        container.append(list);
        continue;
      }
      const paragraph = [];
      while (i < lines.length && lines[i].trim() && !(paragraph.length && startsBlock(lines[i]))) {
        paragraph.push(lines[i++].trim());
      }
      container.append(inline(el("p"), paragraph.join(" "), isCitation));
    }
  }

  function table(rows, isCitation) {
    const cells = (row) => {
      let s = row.trim();
      if (s.startsWith("|")) s = s.slice(1);
      if (s.endsWith("|") && !s.endsWith("\\|")) s = s.slice(0, -1);
      return s.split(/(?<!\\)\|/).map((cell) => cell.trim());
    };
    const head = el("tr");
    for (const cell of cells(rows[0])) head.append(inline(el("th"), cell, isCitation));
    const body = el("tbody");
    for (const row of rows.slice(1)) {
      const tr = el("tr");
      for (const cell of cells(row)) tr.append(inline(el("td"), cell, isCitation));
      body.append(tr);
    }
    return el("table", { class: "md-table" }, el("thead", {}, head), body);
  }

  // Backslash escape | **bold** | *italic* | `code` | [n] | [text](url) (the text is kept).
  const INLINE = /\\([!-/:-@[-`{-~])|\*\*(?=\S)([\s\S]*?\S)\*\*|\*([^\s*](?:[^*]*?[^\s*])?)\*|`([^`]+)`|\[(\d{1,4})\]|\[([^\]\n]+)\]\([^)\s]*\)/g;

  function inline(node, text, isCitation) {
    let last = 0;
    let run = ""; // plain text waiting to become one text node
    const flush = () => {
      if (run) node.append(document.createTextNode(run));
      run = "";
    };
    for (const m of String(text).matchAll(INLINE)) {
      run += text.slice(last, m.index);
      last = m.index + m[0].length;
      if (m[1] !== undefined) run += m[1];
      else if (m[2] !== undefined) {
        flush();
        node.append(inline(el("strong"), m[2], isCitation));
      } else if (m[3] !== undefined) {
        flush();
        node.append(inline(el("em"), m[3], isCitation));
      } else if (m[4] !== undefined) {
        flush();
        node.append(el("code", {}, m[4]));
      } else if (m[5] !== undefined) {
        const n = Number(m[5]);
        if (isCitation(n)) {
          flush();
          node.append(citationLink(n));
        } else run += m[0];
      } else if (m[6] !== undefined) {
        flush();
        node.append(inline(el("span", { class: "md-link" }), m[6], isCitation));
      }
    }
    run += text.slice(last);
    flush();
    return node;
  }

  function citationLink(n) {
    const link = el("a", { class: "citation", href: `#source-${n}`, "data-n": String(n), title: "Show the evidence on the page" }, `[${n}]`);
    link.addEventListener("click", (event) => {
      event.preventDefault();
      openCitation(n);
    });
    return link;
  }

  // ---------------------------------------------------------------------------------------

  function start() {
    setUpAuth();
    setUpPageView();
    setUpImagePreview();
    $("#upload-form").addEventListener("submit", onUpload);
    $("#search-form").addEventListener("submit", onSearch);
    $("#ask-form").addEventListener("submit", onAsk);
    $("#question").addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey) {
        event.preventDefault();
        $("#ask-form").requestSubmit();
      }
    });
    $("#refresh-documents").addEventListener("click", loadDocuments);
    loadDocuments();
  }

  // Exposed for tests of the Markdown renderer in a browser; not an API.
  window.docsightWeb = { renderMarkdown };

  start();
})();
