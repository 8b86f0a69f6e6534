"""``docsight serve``: a REST API under ``/api/v1``, a web page at ``/`` and MCP, all through the
same :class:`~docsight.api.DocSight` facade as the command line. Needs the ``server`` extra."""
