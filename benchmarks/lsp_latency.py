"""The language server's latency while typing: from a `didChange` of a
buffer to the `publishDiagnostics` of that version, the debounce excluded
(the server is started with `debounceMs: 0`), the package's other files
and its imports' summaries already in the cache (the buffer is opened and
analysed once first).

    python benchmarks/lsp_latency.py [TREE] [--file PATH] [--edits N]

TREE defaults to moby (/tmp/corpus/moby) and PATH to its
daemon/libnetwork/drivers/bridge/bridge_linux.go. Each edit changes the
text (a comment line appended, numbered), as typing does; nothing is
written to the tree but the result cache, which goes to a temporary
directory (CUDALINT_CACHE_DIR). Prints each latency, then the median, the
90th percentile and the extremes, in milliseconds, and the median CPU time
the analysis process spent per edit (what the latency would be on an idle
machine, less the protocol's few milliseconds).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

DEFAULT_TREE = Path("/tmp/corpus/moby")
DEFAULT_FILE = "daemon/libnetwork/drivers/bridge/bridge_linux.go"


async def measure(tree: Path, path: Path, edits: int, cache: Path, cpus: list[float]) -> list[float]:
    client = LanguageClient("lsp-latency", "1")
    arrived: dict[int, float] = {}
    event = asyncio.Event()

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def diagnostics(params: types.PublishDiagnosticsParams) -> None:
        if params.version is not None:
            arrived.setdefault(params.version, time.perf_counter())
            event.set()

    @client.feature(types.WINDOW_LOG_MESSAGE)
    def log(params: types.LogMessageParams) -> None:
        cpu = re.search(r"\((\d+) ms of CPU\)", params.message)
        if cpu is not None:
            cpus.append(float(cpu.group(1)))
        if "published" in params.message or "cancelled" in params.message:
            print(f"    server: {params.message}", file=sys.stderr)

    async def version(number: int) -> float:
        while number not in arrived:
            event.clear()
            await asyncio.wait_for(event.wait(), 600)
        return arrived[number]

    env = dict(os.environ, CUDALINT_CACHE_DIR=str(cache))
    await client.start_io(sys.executable, "-m", "cudalint", "--server", cwd=str(tree), env=env)
    await client.initialize_async(types.InitializeParams(
        capabilities=types.ClientCapabilities(), root_uri=tree.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=tree.as_uri(), name=tree.name)],
        initialization_options={"debounceMs": 0},
    ))
    client.initialized(types.InitializedParams())
    uri, text = path.as_uri(), path.read_text()
    started = time.perf_counter()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="go", version=1, text=text),
    ))
    print(f"open (cold: fills the cache): {(await version(1) - started) * 1000:.0f} ms", file=sys.stderr)
    latencies = []
    for number in range(2, edits + 2):
        text += f"// edit {number}\n"
        sent = time.perf_counter()
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=number),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        ))
        latencies.append((await version(number) - sent) * 1000)
        print(f"edit {number - 1}: {latencies[-1]:.0f} ms", file=sys.stderr)
        await asyncio.sleep(0.3)  # a pause in the typing: no edit is cancelled
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tree", nargs="?", type=Path, default=DEFAULT_TREE)
    parser.add_argument("--file", default=DEFAULT_FILE, help="the buffer edited, relative to TREE")
    parser.add_argument("--edits", type=int, default=10)
    args = parser.parse_args()
    tree = args.tree.resolve()
    path = tree / args.file
    if not path.is_file():
        sys.exit(f"lsp_latency: no file {path} (give the tree: python benchmarks/lsp_latency.py TREE)")
    with tempfile.TemporaryDirectory(prefix="cudalint-lsp-bench-") as cache:
        cpus: list[float] = []  # the analysis process's CPU time per analysis, the open's first
        latencies = asyncio.run(measure(tree, path, args.edits, Path(cache), cpus))
    ordered = sorted(latencies)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
    print(
        f"didChange -> publishDiagnostics, {len(latencies)} edits of {args.file}: median {statistics.median(latencies):.0f} ms, "
        f"p90 {p90:.0f} ms, min {ordered[0]:.0f} ms, max {ordered[-1]:.0f} ms; CPU time of the analysis: "
        f"median {statistics.median(cpus[1:] or [0]):.0f} ms (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)"
    )


if __name__ == "__main__":
    main()
