#!/usr/bin/env python3
"""Talk to `vfsmount serve` over its unix socket: JSON-RPC 2.0, one JSON
message per line. Standard library only.

    vfsmount serve --mount type=memory,dst=/memory --listen unix:/tmp/ws.sock &
    python3 client.py /tmp/ws.sock
"""
import json
import socket
import sys


class Client:
    def __init__(self, path):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(path)
        self.stream = sock.makefile("rwb")
        self.last_id = 0

    def call(self, method, **params):
        self.last_id += 1
        request = {"jsonrpc": "2.0", "id": self.last_id, "method": method, "params": params}
        self.stream.write(json.dumps(request).encode() + b"\n")
        self.stream.flush()
        response = json.loads(self.stream.readline())
        if "error" in response:
            raise RuntimeError(response["error"]["message"])
        return response["result"]


def main(path):
    ws = Client(path)
    print(ws.call("workspace.brief")["brief"])
    tools = ws.call("tools.list", dialect="claude")["tools"]
    print("tools:", " ".join(tool["name"] for tool in tools))
    for name, args in [
        ("write", {"path": "/memory/hello.txt", "fileText": "hello from python\n"}),
        ("read", {"path": "/memory/hello.txt"}),
        ("read", {"path": "/memory/missing.txt"}),
    ]:
        result = ws.call("tools.call", name=name, arguments=args)
        print("error:" if result.get("isError") else "ok:", result["text"].rstrip("\n"))


if __name__ == "__main__":
    main(sys.argv[1])
