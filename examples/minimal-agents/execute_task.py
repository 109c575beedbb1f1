#!/usr/bin/env python3
"""A minimal execute_task agent over stdio: a JSON request a line in, one action a line out."""
import json
import sys

for line in sys.stdin:
    request = json.loads(line)
    answer = {"action": "final_answer", "summary": f"Done (turn {request['turn']}).", "agent_name": "minimal-agent"}
    print(json.dumps(answer), flush=True)  # flush: a pipe buffers, and the harness waits for the line
