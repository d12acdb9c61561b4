"""extender: the answer-size limit, transcribed from Volcano's Go unit test.

Source: volcano-sh/volcano at commit ed72c7c815a9fd547a787134676f73d42e9d049c
(Apache-2.0), pkg/scheduler/plugins/extender/extender_test.go:
``TestMaxBodySizeLimit2``.

Volcano's ``send`` wraps the answer in ``http.MaxBytesReader(nil, resp.Body,
maxBodySize)`` with ``maxBodySize = 10 << 20`` (extender.go), so an answer of more
than 10 MiB fails to decode with "http: request body too large". batchsched's
``ExtenderPlugin.send`` reads at most ``_MAX_BODY_BYTES`` of the answer; any failure
is an ``ExtenderError`` whose wording is batchsched's own, so the Go message is not
checked, only that the call fails.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from batchsched.framework.arguments import Arguments
from batchsched.plugins.extender import ExtenderError, ExtenderPlugin

#: Volcano's maxBodySize (extender.go): 10 << 20 bytes.
MAX_BODY_SIZE = 10 << 20


class _Padded(BaseHTTPRequestHandler):
    """Answers every POST with ``{"padding":"aaa..."}``, maxBodySize+1 letters."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        payload = b'{"padding":"' + b"a" * (MAX_BODY_SIZE + 1) + b'"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return


@pytest.fixture()
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Padded)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_max_body_size_limit2(server: str) -> None:
    # Go: extenderPlugin{client: http.Client{}, config: {urlPrefix: server.URL}} and
    # send("test", &PredicateRequest{...}, &result); http.Client{} has no timeout, so
    # the Python plugin is given none either (httpTimeout 0 means none).
    plugin = ExtenderPlugin(Arguments({"extender.urlPrefix": server,
                                       "extender.httpTimeout": "0s"}))
    with pytest.raises(ExtenderError):
        plugin.send("test", {"task": {}, "node": {}})
