"""MCP round-trip latency of `om mcp`: cold start, then apply and prime on a warm server.

Prints medians and p95s in milliseconds, and for scale the same operations as
one-shot CLI processes measured in the same run (the baseline an agent's shell
pays). Usage: python bench/mcp.py [--calls 200]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SESSION = "bench"


def env():
    e = {k: v for k, v in os.environ.items() if k != "OBSERVATIONAL_MEMORY_STORE"}
    e["PYTHONPATH"] = str(ROOT)
    return e


class Client:
    def __init__(self, store):
        self.proc = subprocess.Popen([sys.executable, "-m", "om", "mcp", "--store", store], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env=env(), cwd=ROOT)
        self.next_id = 0

    def request(self, method, params=None):
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()
        response = json.loads(self.proc.stdout.readline())
        assert response["id"] == self.next_id, response
        return response

    def call(self, name, **arguments):
        result = self.request("tools/call", {"name": name, "arguments": arguments})["result"]
        assert not result["isError"], result
        return result["content"][0]["text"]

    def initialize(self):
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "bench", "version": "1"}})
        self.proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        self.proc.stdin.flush()

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def cli(store, *args, input=b""):
    proc = subprocess.run([sys.executable, "-m", "om", "--store", store, "--session", SESSION, *args], input=input,
                          capture_output=True, env=env(), cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def summary(samples):
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return statistics.median(ordered) * 1000, p95 * 1000


def timed(fn, n):
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t)
    return samples


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--cli-calls", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = os.path.join(tmp, "store")
        source_ids = [json.loads(cli(store, "capture", input=json.dumps(
            {"kind": "user", "text": f"fact number {i}: " + "context " * 40, "key": str(i)}).encode()))["source_id"]
            for i in range(40)]
        # A realistic memory for prime: 40 observations, about 8 KB of text.
        cli(store, "apply", input=json.dumps({"through": 40, "observations": [
            {"text": f"Observation {i}: " + "detail " * 25, "source_ids": [sid]}
            for i, sid in enumerate(source_ids)]}).encode())

        cold = []
        for _ in range(10):
            t = time.perf_counter()
            c = Client(store)
            c.initialize()
            c.request("tools/list")
            cold.append(time.perf_counter() - t)
            c.close()

        client = Client(store)
        client.initialize()
        counter = iter(range(10**9))

        def mcp_apply():
            i = next(counter)
            client.call("apply", session=SESSION, checkpoint={"through": 40, "observations": [
                {"text": f"bench observation {i}", "source_ids": [source_ids[i % 40]]}]})

        def mcp_prime():
            client.call("prime", session=SESSION)

        timed(mcp_prime, 10)  # warm-up
        apply_s = timed(mcp_apply, args.calls)
        prime_s = timed(mcp_prime, args.calls)
        ping_s = timed(lambda: client.request("ping"), args.calls)
        client.close()

        def cli_apply():
            i = next(counter)
            cli(store, "apply", input=json.dumps({"through": 40, "observations": [
                {"text": f"cli observation {i}", "source_ids": [source_ids[i % 40]]}]}).encode())

        cli_apply_s = timed(cli_apply, args.cli_calls)
        cli_prime_s = timed(lambda: cli(store, "prime"), args.cli_calls)

    rows = [
        ("server cold start (spawn, initialize, tools/list)", cold),
        ("ping round trip (warm)", ping_s),
        ("apply round trip (warm, 1 observation)", apply_s),
        ("prime round trip (warm)", prime_s),
        ("CLI apply process (baseline)", cli_apply_s),
        ("CLI prime process (baseline)", cli_prime_s),
    ]
    print(f"om mcp latency, {args.calls} warm calls each, python {sys.version.split()[0]}")
    for label, samples in rows:
        median, p95 = summary(samples)
        print(f"  {label:52s} median {median:7.2f} ms   p95 {p95:7.2f} ms   (n={len(samples)})")
    print(f"  apply: MCP / CLI median ratio {statistics.median(apply_s) / statistics.median(cli_apply_s):.3f}")
    print(f"  prime: MCP / CLI median ratio {statistics.median(prime_s) / statistics.median(cli_prime_s):.3f}")


if __name__ == "__main__":
    main()
