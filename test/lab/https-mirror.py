"""An internal HTTPS mirror of RKE2 release files for tests: Python's own HTTP server over TLS,
serving a directory (GET and HEAD), one line per request on stderr (method, path, status).

    python3 https-mirror.py <address> <port> <directory> <certificate.pem> <key.pem>

It prints "listening" on stdout once it accepts connections.
"""
import functools
import http.server
import ssl
import sys


class Handler(http.server.SimpleHTTPRequestHandler):
    def log_request(self, code="-", size="-"):
        sys.stderr.write(f"{self.command} {self.path} {code}\n")
        sys.stderr.flush()

    def log_message(self, *args):
        pass


def main():
    address, port, directory, cert, key = sys.argv[1:6]
    server = http.server.ThreadingHTTPServer(
        (address, int(port)), functools.partial(Handler, directory=directory)
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    print("listening", flush=True)
    server.serve_forever()


main()
