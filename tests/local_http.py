"""Test helper: a real HTTP server on 127.0.0.1 (a free port), served from a thread of the
test process, for the code that downloads (preset zips, hub stand-ins, a package index).

    server = LocalHTTPServer(handler_class)   # http.server.BaseHTTPRequestHandler subclass
    urllib.request.urlopen(server.url + "/path")
    server.close()
"""

import http.server
import threading


class LocalHTTPServer:
    """``http.server.ThreadingHTTPServer`` with ``handler`` on 127.0.0.1 at a free ``port``
    (``url``: ``http://127.0.0.1:<port>``), serving in a daemon thread until `close`."""

    def __init__(self, handler):
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        # Polls for shutdown every 50 ms: close() returns at once, not after up to 0.5 s.
        self.thread = threading.Thread(target=self.httpd.serve_forever,
                                       kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def close(self):
        """Stops serving, closes the socket and waits for the serving thread."""
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()
