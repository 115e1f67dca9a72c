"""``/api/v1/docs`` names nothing beyond the API itself (issue 36): Swagger UI's script, style and icon come
from the API's own files, so the page works offline (tests/browser/test_browser_api_docs.py draws it in
Chromium with the network cut off)."""

from __future__ import annotations

import re

from tests.api_harness import client


def test_the_docs_page_loads_only_the_apis_own_files():
    api = client(None)  # the page needs no database
    page = api.get("/api/v1/docs")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    html = page.text
    assert "://" not in html  # no CDN, no absolute address of any kind
    assert "validatorUrl" in html and '"validatorUrl": null' in html  # no badge image from validator.swagger.io
    assets = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert {a.rsplit("/", 1)[1] for a in assets} >= {"swagger-ui-bundle.js", "swagger-ui.css"}, assets
    for asset in assets:
        assert asset.startswith("/api/v1/docs/static/"), asset
        got = api.get(asset)
        assert got.status_code == 200 and len(got.content) > 1000, asset
    assert "url: '/api/v1/openapi.json'" in html
    assert api.get("/api/v1/openapi.json").status_code == 200


def test_the_docs_files_are_not_operations_and_a_missing_one_is_a_problem():
    api = client(None)
    assert not any("docs" in path for path in api.get("/api/v1/openapi.json").json()["paths"])
    missing = api.get("/api/v1/docs/static/nothing-here.js")
    assert missing.status_code == 404 and missing.headers["content-type"] == "application/problem+json"
