#!/usr/bin/env python3
"""A minimal external agent: acknowledges each forward, then POSTs its reply (raw text) to the callbackUrl."""
import json, sys, threading, urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

def reply(url, text):  # later, on a thread of its own: the acknowledgement does not wait for it
    urllib.request.urlopen(urllib.request.Request(url, f"You said: {text}".encode(), {"Content-Type": "text/plain"}), timeout=30)

class Agent(BaseHTTPRequestHandler):
    def do_POST(self):
        forward = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.send_response(200), self.end_headers()
        threading.Thread(target=reply, args=(forward["callbackUrl"], forward["message"]["text"])).start()

server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 7000), Agent)
print(f"inputUrl: http://127.0.0.1:{server.server_port}/v1/assistant/input", flush=True)
server.serve_forever()
