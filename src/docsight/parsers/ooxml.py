"""What the three Office Open XML parsers share: type detection, archive checks, images, errors.

DOCX, PPTX and XLSX files are ZIP archives of XML parts. The archive is inspected here *before*
any library opens it, because python-docx, python-pptx and openpyxl trust the archive: they read
whole members into memory and never ask how large a member will be once inflated. Python's
``zipfile`` stops inflating a member at its declared size (and then fails the CRC check), so
checking the declared sizes in the central directory bounds what any of them can decompress.
"""

from __future__ import annotations

import io
import re
import warnings
import zipfile
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from docsight.document.builder import DocumentBuilder
from docsight.errors import DocsightError, EncryptedDocumentError, LimitExceededError, ParseError
from docsight.parsers.sniff import DOCX, PPTX, XLSX
from docsight.parsers.textutil import clean_text, squash_spaces
from docsight.settings import ParseSettings

_CONTENT_TYPES = "[Content_Types].xml"
_CT_NS = "{http://schemas.openxmlformats.org/package/2006/content-types}"
_OFFICE = "application/vnd.openxmlformats-officedocument."

#: Content types of the main part, for documents, templates, shows and macro-enabled variants.
MAIN_PART_TYPES: dict[str, str] = {
    _OFFICE + "wordprocessingml.document.main+xml": DOCX,
    _OFFICE + "wordprocessingml.template.main+xml": DOCX,
    "application/vnd.ms-word.document.macroEnabled.main+xml": DOCX,
    "application/vnd.ms-word.template.macroEnabledTemplate.main+xml": DOCX,
    _OFFICE + "presentationml.presentation.main+xml": PPTX,
    _OFFICE + "presentationml.slideshow.main+xml": PPTX,
    _OFFICE + "presentationml.template.main+xml": PPTX,
    "application/vnd.ms-powerpoint.presentation.macroEnabled.main+xml": PPTX,
    "application/vnd.ms-powerpoint.slideshow.macroEnabled.main+xml": PPTX,
    "application/vnd.ms-powerpoint.template.macroEnabled.main+xml": PPTX,
    _OFFICE + "spreadsheetml.sheet.main+xml": XLSX,
    _OFFICE + "spreadsheetml.template.main+xml": XLSX,
    "application/vnd.ms-excel.sheet.macroEnabled.main+xml": XLSX,
    "application/vnd.ms-excel.template.macroEnabled.main+xml": XLSX,
}
_MAIN_MEMBERS = {
    "word/document.xml": DOCX,
    "ppt/presentation.xml": PPTX,
    "xl/workbook.xml": XLSX,
}
#: ``[Content_Types].xml`` is a few kilobytes; anything far larger is not worth sniffing.
_MAX_CONTENT_TYPES_BYTES = 1 << 20
#: Ratios are judged only for members (and archives) at least this large once inflated: a tiny
#: blank part compresses 500:1 and is harmless.
RATIO_MIN_BYTES = 1 << 20
_MAX_REASON_CHARS = 300
#: The end-of-central-directory record: 22 bytes plus a comment of up to 65535.
_EOCD_SEARCH = 22 + 65_535
#: Sniffing reads central directories up to this many entries.
_SNIFF_MAX_MEMBERS = 100_000
#: Merged table cells repeat their text in every grid cell they cover only up to this length.
MAX_REPEAT_CHARS = 100
_DTD_SCAN_BYTES = 8192
#: Parts never read as XML, so never scanned for a DTD.
_BINARY_PARTS = (".png", ".jpeg", ".jpg", ".gif", ".bmp", ".tif", ".tiff", ".emf", ".wmf", ".bin")
#: A prolog (declaration, comments, whitespace) longer than this is refused: a DTD hidden far
#: down cannot be ruled out without reading further.
_MAX_PROLOG_BYTES = 1 << 20
#: The root element's start tag, in UTF-8 or either UTF-16 (a NUL between the bytes).
_ROOT_START = re.compile(rb"<\x00?[A-Za-z_]")
_DTD_MARKERS = tuple(
    marker.encode(codec)
    for marker in ("<!DOCTYPE", "<!doctype")
    for codec in ("utf-8", "utf-16-le", "utf-16-be")
)
_DRIVE = re.compile(r"^[A-Za-z]:")


def ooxml_media_type(data: bytes) -> str | None:
    """DOCX, PPTX or XLSX for an Office Open XML archive, ``None`` for any other ZIP (or junk)."""
    declared = declared_members(data)
    if declared is not None and declared > _SNIFF_MAX_MEMBERS:
        # Reading a huge central directory costs memory; the local headers tell the type and
        # check_archive refuses the file later.
        return _type_from_local_headers(data)
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError):
        # A truncated archive has lost its central directory, but its local headers still name
        # the parts: calling it a damaged Word file beats calling it an unsupported ZIP.
        return _type_from_local_headers(data)
    with archive:
        names = set(archive.namelist())
        info = archive.NameToInfo.get(_CONTENT_TYPES)
        if info is not None and info.file_size <= _MAX_CONTENT_TYPES_BYTES:
            try:
                found = _main_type_from_content_types(archive.read(info))
            except Exception:  # a damaged member: fall back on the member names
                found = None
            if found is not None:
                return found
    for member, media_type in _MAIN_MEMBERS.items():
        if member in names:
            return media_type
    return None


def declared_members(data: bytes) -> int | None:
    """The member count the end-of-central-directory record declares, read without parsing."""
    at = data.rfind(b"PK\x05\x06", max(0, len(data) - _EOCD_SEARCH))
    if at < 0 or at + 22 > len(data):
        return None
    count = int.from_bytes(data[at + 10 : at + 12], "little")
    locator = at - 20
    if count == 0xFFFF and locator >= 0 and data[locator : locator + 4] == b"PK\x06\x07":
        # ZIP64: the real count sits in the ZIP64 end record the locator points at.
        record = int.from_bytes(data[locator + 8 : locator + 16], "little")
        if data[record : record + 4] == b"PK\x06\x06":
            count = int.from_bytes(data[record + 32 : record + 40], "little")
    return count


def _type_from_local_headers(data: bytes, limit: int = 5000) -> str | None:
    """The type of an archive whose central directory is gone, read off its local headers."""
    prefixes = {"word/": DOCX, "ppt/": PPTX, "xl/": XLSX}
    by_prefix: str | None = None
    start = 0
    for _ in range(limit):
        at = data.find(b"PK\x03\x04", start)
        if at < 0 or at + 30 > len(data):
            break
        start = at + 4
        method = int.from_bytes(data[at + 8 : at + 10], "little")
        size = int.from_bytes(data[at + 18 : at + 22], "little")
        name_len = int.from_bytes(data[at + 26 : at + 28], "little")
        extra_len = int.from_bytes(data[at + 28 : at + 30], "little")
        name = data[at + 30 : at + 30 + name_len].decode("utf-8", errors="replace")
        if name == _CONTENT_TYPES and method in (0, 8):
            body = at + 30 + name_len + extra_len
            raw = data[body : body + min(size, _MAX_CONTENT_TYPES_BYTES)]
            try:
                xml = (
                    raw
                    if method == 0
                    else zlib.decompressobj(-15).decompress(raw, _MAX_CONTENT_TYPES_BYTES)
                )
            except zlib.error:
                continue
            found = _main_type_from_content_types(xml)
            if found is not None:
                return found
        by_prefix = by_prefix or next(
            (t for prefix, t in prefixes.items() if name.startswith(prefix)), None
        )
    return by_prefix


def safe_xml(xml: bytes) -> Any:
    """Parse untrusted XML: no entity expansion, no DTD loading, no network, default limits."""
    from lxml import etree

    parser = etree.XMLParser(
        resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False
    )
    return etree.fromstring(xml, parser=parser)


def core_metadata(props: Any) -> tuple[str | None, dict[str, str]]:
    """``(title, metadata)`` from the core properties of any of the three libraries."""
    try:
        fields = {
            "title": props.title,
            "author": getattr(props, "author", None) or getattr(props, "creator", None),
            "subject": props.subject,
            "keywords": props.keywords,
            "created": props.created.isoformat() if props.created else None,
            "modified": props.modified.isoformat() if props.modified else None,
        }
    except Exception:  # malformed core properties are not worth failing a document for
        return None, {}
    metadata = {k: squash_spaces(clean_text(str(v))) for k, v in fields.items() if v}
    return metadata.get("title") or None, metadata


def _main_type_from_content_types(xml: bytes) -> str | None:
    try:
        root = safe_xml(xml)
    except Exception:  # not XML: the member names decide
        return None
    for override in root.iter(_CT_NS + "Override"):
        found = MAIN_PART_TYPES.get((override.get("ContentType") or "").strip())
        if found is not None:
            return found
    return None


def _unsafe_name(name: str) -> str | None:
    """Why a member name is not a plain relative path, or ``None`` when it is."""
    if not name:
        return "an empty member name"
    if "\x00" in name:
        return "a NUL byte in a member name"
    if name.startswith(("/", "\\")) or _DRIVE.match(name):
        return f"absolute member path {name[:120]!r}"
    if ".." in re.split(r"[/\\]", name):
        return f"member path {name[:120]!r} escapes the archive"
    return None


def check_archive(path: str | Path, data: bytes, settings: ParseSettings) -> None:
    """Refuse archives that are corrupt, hostile or larger than the limits, before parsing.

    Raises :class:`LimitExceededError` for too many members, too large an inflated size or too
    high a compression ratio; :class:`ParseError` for a corrupt archive, duplicate or unsafe
    member names, unusual compression and XML parts with a DTD; :class:`EncryptedDocumentError`
    for encrypted members. Only central-directory data and the first kilobytes of XML parts are
    read: nothing is inflated in full.
    """
    declared = declared_members(data)
    if declared is not None and declared > settings.max_zip_members:
        # Refused from the end record, before zipfile builds an entry per member.
        raise LimitExceededError(
            path,
            f"ZIP archive declares {declared} members, more than the limit of "
            f"{settings.max_zip_members} (max_zip_members)",
        )
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as exc:
        raise ParseError(path, f"not a valid ZIP archive ({_reason(exc)})") from exc
    if not infos:
        raise ParseError(path, "empty ZIP archive")
    if len(infos) > settings.max_zip_members:
        raise LimitExceededError(
            path,
            f"ZIP archive has {len(infos)} members, more than the limit of "
            f"{settings.max_zip_members} (max_zip_members)",
        )
    seen: set[str] = set()
    total = compressed = 0
    for info in infos:
        name = info.filename
        unsafe = _unsafe_name(name)
        if unsafe is not None:
            raise ParseError(path, f"unsafe ZIP archive: {unsafe}")
        # OPC part names are case-insensitive, so "a.xml" and "A.XML" name the same part.
        key = name.casefold()
        if key in seen:
            raise ParseError(path, f"ZIP archive holds member {name[:120]!r} more than once")
        seen.add(key)
        if info.flag_bits & 0x1:
            raise EncryptedDocumentError(path, f"ZIP member {name[:120]!r} is encrypted")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            # OOXML allows only these two; others (bzip2, LZMA) are slow to inflate and unusual.
            raise ParseError(
                path, f"ZIP member {name[:120]!r} uses compression method {info.compress_type}"
            )
        ratio = info.file_size / max(info.compress_size, 1)
        if info.file_size >= RATIO_MIN_BYTES and ratio > settings.max_zip_ratio:
            raise LimitExceededError(
                path,
                f"ZIP member {name[:120]!r} inflates {ratio:.0f}:1 to {_mb(info.file_size)}, "
                f"more than the limit of {settings.max_zip_ratio:g}:1 (max_zip_ratio)",
            )
        total += info.file_size
        compressed += info.compress_size
    limit = settings.max_unzipped_mb * (1 << 20)
    if total > limit:
        raise LimitExceededError(
            path,
            f"ZIP archive inflates to {_mb(total)}, more than the limit of "
            f"{settings.max_unzipped_mb:g} MB (max_unzipped_mb)",
        )
    ratio = total / max(compressed, 1)
    if total >= RATIO_MIN_BYTES and ratio > settings.max_zip_ratio:
        raise LimitExceededError(
            path,
            f"ZIP archive inflates {ratio:.0f}:1 to {_mb(total)}, more than the limit of "
            f"{settings.max_zip_ratio:g}:1 (max_zip_ratio)",
        )
    _refuse_dtds(path, data, infos)


def _refuse_dtds(path: str | Path, data: bytes, infos: list[zipfile.ZipInfo]) -> None:
    """Refuse XML parts that declare a DTD.

    The Open Packaging Conventions forbid DTDs in package parts because entity expansion is a
    denial-of-service vector; they are also how XXE payloads arrive. Parsers below resolve no
    entities, but a refusal here is cheaper than an entity bomb reaching any XML parser. A DTD
    must precede the root element, so the prolog is enough: the first kilobytes of each part,
    more only when comments or whitespace push the root element further (up to a limit).
    """
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for info in infos:
            if info.is_dir() or info.filename.lower().endswith(_BINARY_PARTS):
                continue
            try:
                with archive.open(info) as member:
                    head = member.read(_DTD_SCAN_BYTES)
                    if not _looks_like_xml(head):
                        continue  # parts of any name are parsed as XML if they are XML
                    if len(head) == _DTD_SCAN_BYTES and not _ROOT_START.search(head):
                        head += member.read(_MAX_PROLOG_BYTES - len(head))
            except Exception as exc:  # a corrupt deflate stream, a bad local header
                raise ParseError(
                    path, f"damaged ZIP member {info.filename[:120]!r} ({_reason(exc)})"
                ) from exc
            if len(head) >= _MAX_PROLOG_BYTES and not _ROOT_START.search(head):
                raise ParseError(
                    path,
                    f"XML part {info.filename[:120]!r} has no root element in its first "
                    f"{_MAX_PROLOG_BYTES >> 20} MiB",
                )
            if any(marker in head for marker in _DTD_MARKERS):
                raise ParseError(
                    path,
                    f"XML part {info.filename[:120]!r} declares a DTD, which Office files must "
                    "not (entity expansion and external entities)",
                )


def _looks_like_xml(head: bytes) -> bool:
    text = head[:64].lstrip(b"\xef\xbb\xbf\xff\xfe\x00 \t\r\n")
    return text.startswith(b"<")


def _mb(size: int) -> str:
    return f"{size / (1 << 20):.1f} MB"


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    if len(text) > _MAX_REASON_CHARS:
        text = text[:_MAX_REASON_CHARS] + "…"
    return text


@contextmanager
def library_errors(path: str | Path, what: str) -> Iterator[None]:
    """Turn any exception of a third-party library into a :class:`ParseError` naming the file.

    Office libraries raise everything from ``KeyError`` (a missing part) to ``XMLSyntaxError``
    and ``RecursionError`` (deep nesting) on malformed input; callers see one error type.
    """
    try:
        yield
    except DocsightError:
        raise
    except MemoryError as exc:
        raise ParseError(path, f"{what}: out of memory") from exc
    except Exception as exc:
        raise ParseError(path, f"{what}: {type(exc).__name__}: {_reason(exc)}") from exc


def list_markdown(items: Sequence[tuple[int, bool, str]]) -> str:
    """Markdown of list items given as ``(level, ordered, text)``; levels nest by indentation."""
    lines: list[str] = []
    counters: dict[int, int] = {}
    widths: list[int] = []  # marker width of the latest item at each depth
    base = min((level for level, _, _ in items), default=0)
    for level, ordered, text in items:
        # A level may jump by more than one; it then nests one deeper than its parent.
        depth = min(level - base, len(widths))
        del widths[depth:]
        for deeper in [k for k in counters if k > depth]:
            del counters[deeper]
        counters[depth] = counters.get(depth, 0) + 1
        marker = f"{counters[depth]}." if ordered else "-"
        # CommonMark nests an item under its parent when indented past the parent's marker.
        indent = " " * sum(widths)
        body = text.replace("\n", "\n" + indent + " " * (len(marker) + 1))
        lines.append(f"{indent}{marker} {body}")
        widths.append(len(marker) + 1)
    return "\n".join(lines)


def _chart_value(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    if isinstance(value, float):
        return f"{value:.10g}"
    return squash_spaces(clean_text(str(value)).replace("\n", " "))


def chart_content(chart: Any) -> tuple[str, str | None, dict[str, Any]]:
    """``(one-line summary, data as a Markdown table, attrs)`` of a python-pptx chart.

    DrawingML charts are the same in all three formats, so Word charts are read through
    python-pptx's chart classes too. Rows are categories, columns are series.
    """
    from docsight.document.tables import rows_to_markdown

    try:
        kind = str(chart.chart_type.name).lower().replace("_", " ")
    except Exception:  # chart types python-pptx does not name
        kind = "unknown"
    title = ""
    if chart.has_title and chart.chart_title.has_text_frame:
        title = _chart_value(chart.chart_title.text_frame.text)
    categories: list[str] = []
    series: list[tuple[str, list[str]]] = []
    for plot in chart.plots:
        if not categories:
            try:
                categories = [_chart_value(c) for c in plot.categories]
            except Exception:  # XY and bubble plots have no categories
                categories = []
        for s in plot.series:
            series.append((_chart_value(s.name), [_chart_value(v) for v in s.values]))
    named = len(categories)
    n = max([named] + [len(values) for _, values in series])
    categories += [str(i + 1) for i in range(named, n)]
    rows = [["Category", *(name or f"Series {i + 1}" for i, (name, _) in enumerate(series))]]
    for i in range(n):
        rows.append([categories[i], *(v[i] if i < len(v) else "" for _, v in series)])
    summary = f"{kind} chart" + (f" '{title}'" if title else "")
    if any(name for name, _ in series):
        summary += "; series: " + ", ".join(name for name, _ in series if name)
    if named:
        summary += f"; {named} categories"
    attrs = {"chart_type": kind, "title": title, "series": len(series), "categories": n}
    return summary, rows_to_markdown(rows) if series else None, attrs


def bounded_rows(rows: list[list[str]], limit: int) -> tuple[list[list[str]], bool]:
    """Rows cut so that the padded grid holds at most ``limit`` cells; ``True`` when cut.

    Markdown pads every row to the widest one, so a single very wide row in a long table would
    otherwise multiply into a huge grid.
    """
    width = max((len(row) for row in rows), default=0)
    if len(rows) * width <= limit:
        return rows, False
    width = min(width, limit)
    return [row[:width] for row in rows[: max(1, limit // width)]], True


# --- embedded images -----------------------------------------------------------------------------

_KEEP_AS_IS = {"PNG": "image/png", "JPEG": "image/jpeg"}
#: Raster formats converted to PNG so every saved crop is PNG or JPEG.
_CONVERT = {"GIF", "BMP", "TIFF", "WEBP", "DIB", "ICO", "MPO"}
#: Decoders tried on embedded images (MPO files open through the JPEG decoder).
_OPEN_FORMATS = sorted((set(_KEEP_AS_IS) | _CONVERT) - {"MPO"})


def image_asset(
    builder: DocumentBuilder, blob: bytes, settings: ParseSettings, where: str
) -> tuple[str | None, dict[str, Any]]:
    """Save an embedded image as a ``crop`` asset: ``(asset id or None, attrs for the figure)``.

    The header is read first, so an image over ``max_image_pixels`` is refused without being
    decoded. Vector formats (EMF, WMF, SVG) and unreadable data get no asset, only a warning.
    """
    from PIL import Image

    attrs: dict[str, Any] = {}
    with warnings.catch_warnings():
        # Pillow warns about large images; the explicit pixel limit below decides instead.
        warnings.simplefilter("ignore")
        try:
            # Only raster formats we keep or convert: no EPS (Ghostscript), no exotic plugins.
            with Image.open(io.BytesIO(blob), formats=_OPEN_FORMATS) as image:
                width, height = image.size
                fmt = (image.format or "").upper()
                attrs.update(image_format=fmt.lower(), width=width, height=height)
                if width * height > settings.max_image_pixels:
                    builder.warn(
                        f"{where}: image of {width}x{height} pixels is larger than "
                        f"max_image_pixels ({settings.max_image_pixels}); not saved"
                    )
                    return None, attrs
                if fmt in _KEEP_AS_IS:
                    if fmt == "PNG":
                        image.verify()  # chunk CRCs, without decoding pixels
                    return builder.add_asset("crop", _KEEP_AS_IS[fmt], blob, width, height), attrs
                if fmt in _CONVERT:
                    out = io.BytesIO()
                    image.convert("RGBA" if "A" in image.getbands() else "RGB").save(out, "PNG")
                    return builder.add_asset("crop", "image/png", out.getvalue(), width, height), (
                        attrs
                    )
        except Image.UnidentifiedImageError:
            # Vector pictures (EMF, WMF, SVG) and anything else that is no supported raster.
            builder.warn(f"{where}: not a PNG, JPEG, GIF, BMP, TIFF or WebP image; not saved")
            return None, attrs
        except Exception as exc:  # Pillow raises many types on damaged or unknown data
            builder.warn(f"{where}: unreadable image ({_reason(exc)}); not saved")
            return None, attrs
    builder.warn(f"{where}: {attrs.get('image_format') or 'unknown'} image format; not saved")
    return None, attrs
