"""The HTTP API beside the app (issue 28): ``annotate.api.app`` (FastAPI), problems as RFC 9457
problem+json (``annotate.api.problems``), and the reference judge client (``annotate.api.client``).
Everything it does goes through ``annotate.service``: the same rules as the pages, checked there."""
