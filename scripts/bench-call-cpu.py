#!/usr/bin/env python3
"""The server's own cost per `content_read` call, for A/B comparisons of two
builds on a shared, noisy machine, where calls/s mean nothing.

Drives one `gatehouse mcp` process over pipes (initialize, 300 warm-up calls,
then N calls with WINDOW in flight) and counts only those N calls:

  perf       `perf stat` switched on for the window: CPU time (task-clock,
             every thread of the process), system calls and context switches
             per call. Moves with the machine's load; alternate the builds.
  callgrind  valgrind's instruction count (user space, every thread) for the
             window, and a profile to read with `callgrind_annotate`.
             Deterministic within a fraction of a percent, but valgrind runs
             the software SHA-256 (no SHA-NI), so hashing weighs more in it
             than on the CPU.

Usage:
  bench-call-cpu.py perf|callgrind GATEHOUSE SITE CONFIG_DIR KEY N WINDOW OUT
KEY is an API key of the site (`-`: the anonymous actor). Make a site the way
the bench does (crates/gatehouse-cli/benches/mcp/site.rs):
  GATEHOUSE_CONFIG_DIR=$CFG gatehouse site init $SITE --scratch
  GATEHOUSE_CONFIG_DIR=$CFG gatehouse --site $SITE keys mint --label bench --roles author --json
Prints one JSON line; OUT is perf's output or callgrind's profile.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

WARM_UP = 300


def main():
    mode, binary, site, config, key, n, window, out = sys.argv[1:9]
    n, window = int(n), int(window)
    env = dict(os.environ, GATEHOUSE_CONFIG_DIR=config, GATEHOUSE_LOG="error")
    env.pop("GATEHOUSE_API_KEY", None)
    if key != "-":
        env["GATEHOUSE_API_KEY"] = key
    server = [binary, "--site", site, "mcp"]
    if mode == "perf":
        tmp = tempfile.mkdtemp(prefix="bench-call-cpu")
        ctl_path, ack_path = os.path.join(tmp, "ctl"), os.path.join(tmp, "ack")
        os.mkfifo(ctl_path)
        os.mkfifo(ack_path)
        events = "task-clock,raw_syscalls:sys_enter,context-switches"
        cmd = ["perf", "stat", "-x,", "-o", out, "-e", events,
               "--control", f"fifo:{ctl_path},{ack_path}", "-D", "-1", "--"] + server
    elif mode == "callgrind":
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
               "--instr-atstart=no"] + server
    else:
        sys.exit(f"unknown mode {mode}")
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, env=env, bufsize=0)
    if mode == "perf":
        ctl, ack = open(ctl_path, "w"), open(ack_path, "r")
    pending = b""

    def send(message):
        p.stdin.write((json.dumps(message) + "\n").encode())

    def recv():
        nonlocal pending
        while b"\n" not in pending:
            chunk = os.read(p.stdout.fileno(), 65536)
            if not chunk:
                sys.exit("the server closed stdout")
            pending += chunk
        line, pending = pending.split(b"\n", 1)
        return json.loads(line)

    def calls(first, count):
        sent = answered = 0
        while answered < count:
            while sent < count and sent - answered < window:
                send({"jsonrpc": "2.0", "id": first + sent, "method": "tools/call",
                      "params": {"name": "content_read", "arguments": {"slug": "welcome"}}})
                sent += 1
            r = recv()
            if "result" not in r or r["result"].get("isError"):
                sys.exit(f"a call failed: {r}")
            answered += 1

    def counting(on):
        if mode == "perf":
            ctl.write("enable\n" if on else "disable\n")
            ctl.flush()
            ack.readline()
        else:
            subprocess.run(["callgrind_control", "-i", "on" if on else "off", str(p.pid)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)

    send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "bench-call-cpu", "version": "1"}}})
    recv()
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    calls(1, WARM_UP)
    counting(True)
    start = time.perf_counter()
    calls(1 + WARM_UP, n)
    wall = time.perf_counter() - start
    counting(False)
    p.stdin.close()
    p.wait()
    result = {"mode": mode, "calls": n, "window": window, "calls_s": round(n / wall)}
    if mode == "perf":
        for line in open(out):
            f = line.strip().split(",")
            if len(f) < 3 or line.startswith("#"):
                continue
            try:
                value = float(f[0])
            except ValueError:
                continue
            if f[2] == "task-clock":  # msec
                result["cpu_us_per_call"] = round(value * 1000 / n, 1)
            elif f[2].startswith("raw_syscalls"):
                result["syscalls_per_call"] = round(value / n, 2)
            elif f[2] == "context-switches":
                result["switches_per_call"] = round(value / n, 3)
    else:
        annotate = subprocess.run(["callgrind_annotate", out], capture_output=True, text=True)
        for line in annotate.stdout.splitlines():
            if "PROGRAM TOTALS" in line:
                total = int(line.split()[0].replace(",", ""))
                result["instructions_per_call"] = round(total / n)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
