"""A harness of the tests' own: sends an execute_task agent one request and waits for its answer,
with a timeout of its own or none (as the eval harness's stdio and socket adapters have none).

    waiting_harness.py stdio JSON_ARGV [GIVE_UP_S]   starts the agent (argv as a JSON list)
    waiting_harness.py tcp HOST:PORT [GIVE_UP_S]
    waiting_harness.py unix PATH [GIVE_UP_S]
    waiting_harness.py http HOST:PORT [GIVE_UP_S]   POST /execute_task on a connection of its own

Prints `waiting PID` once the request is sent (the agent's pid over stdio, else 0), then
`answered` or `gave up`. Giving up is what a
harness does: it closes the agent's stdin or the connection and goes on (here, for a second:
its report, its next scenario); over stdio it then waits for the agent to end.
"""

import json
import select
import socket
import subprocess
import sys
import time

REQUEST = {"task_description": "Look up cust_1.", "turn": 1, "conversation_history": []}


def main():
    transport, target = sys.argv[1], sys.argv[2]
    give_up = float(sys.argv[3]) if len(sys.argv) > 3 else None
    agent = None
    if transport == "stdio":
        agent = subprocess.Popen(json.loads(target), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        out, send, close = agent.stdout, agent.stdin.write, agent.stdin.close
        send_flush = lambda b: (send(b), agent.stdin.flush())
    else:
        family = socket.AF_UNIX if transport == "unix" else socket.AF_INET
        conn = socket.socket(family, socket.SOCK_STREAM)
        if transport in ("tcp", "http"):
            host, port = target.rsplit(":", 1)
            conn.connect((host, int(port)))
        else:
            conn.connect(target)
        out, close = conn, conn.close
        send_flush = conn.sendall
    if transport == "http":
        body = json.dumps(REQUEST).encode()
        head = f"POST /execute_task HTTP/1.1\r\nHost: {target}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        send_flush(head.encode() + body)
    else:
        send_flush((json.dumps(REQUEST) + "\n").encode())
    print("waiting", agent.pid if agent else 0, flush=True)
    ready, _, _ = select.select([out], [], [], give_up)
    if ready:
        print("answered", flush=True)
        close()
    else:
        print("gave up", flush=True)
        close()
        time.sleep(1)
    if agent is not None:
        agent.wait()


main()
