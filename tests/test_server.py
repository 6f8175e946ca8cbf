"""`cudalint --server` driven over stdio by a real LSP client (pytest-lsp's,
on pygls): diagnostics on open and on edits of unsaved text, code actions
whose edits give the fixtures' golden text, bad input that never stops the
server, one configuration per workspace folder, and a newer edit that
cancels the analysis in flight."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from lsprotocol import types

from conftest import FIXTURES
from lspclient import Client, apply_edits

LEAK = """package gpu

/*
#include <cuda_runtime_api.h>
*/
import "C"

import "unsafe"

func Fill(n int) error {
	var p unsafe.Pointer
	if st := C.cudaMalloc(&p, C.size_t(n)); st != C.cudaSuccess {
		return nil
	}
	return nil
}
"""
RELEASED = LEAK.replace("\t\treturn nil\n\t}\n\treturn nil", "\t\treturn nil\n\t}\n\tdefer C.cudaFree(p)\n\treturn nil")
# The range of `C.cudaMalloc(&p, C.size_t(n))`, 0-based.
ACQUIRE = types.Range(start=types.Position(line=11, character=10), end=types.Position(line=11, character=39))


def _module(directory: Path, files: dict[str, str] | None = None) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "go.mod").write_text("module example.com/gpu\n\ngo 1.21\n")
    for name, text in (files or {}).items():
        (directory / name).write_text(text)
    return directory


def run(scenario, cwd: Path, folders: list[Path], options: dict | None = None):
    """Start a server, run `scenario(client)`, shut the server down."""

    async def main():
        client = Client()
        result = await client.start(cwd, folders, options)
        try:
            return await scenario(client, result)
        finally:
            await client.stop()

    return asyncio.run(main())


def test_a_leak_is_reported_where_it_is_and_the_release_clears_it(tmp_path):
    module = _module(tmp_path / "svc", {"fill.go": LEAK})

    async def scenario(client: Client, init: types.InitializeResult):
        capabilities = init.capabilities
        assert capabilities.text_document_sync.change == types.TextDocumentSyncKind.Incremental
        assert "source.fixAll.cudalint" in capabilities.code_action_provider.code_action_kinds
        assert "cudalint.selectReason" in capabilities.execute_command_provider.commands
        uri = client.open(module / "fill.go")
        (leak,) = await client.diagnostics(uri)
        assert (leak.code, leak.range, leak.severity) == ("CL101", ACQUIRE, types.DiagnosticSeverity.Error)
        assert leak.source.startswith("cudalint")
        assert leak.code_description.href.endswith("#cl101-leak-on-path")
        assert "return at line 15" in leak.message
        related = {info.message for info in leak.related_information}
        assert "p is still held here" in related and any(m.startswith("1. device memory acquired") for m in related)
        # Unsaved: the file on disk still leaks, the buffer does not.
        version = client.change(uri, RELEASED)
        assert await client.diagnostics(uri, version) == []
        assert (module / "fill.go").read_text() == LEAK
        version = client.change(uri, LEAK)
        assert [d.code for d in await client.diagnostics(uri, version)] == ["CL101"]

    run(scenario, module, [module])


def test_the_quick_fix_and_fix_all_give_the_golden_text(tmp_path):
    leaks = FIXTURES / "fixes" / "leaks"
    module = _module(tmp_path / "leaks", {"fill.go": LEAK})
    shutil.copy(leaks / "leaks.go", module / "leaks.go")

    async def scenario(client: Client, init):
        uri = client.open(module / "fill.go")
        (leak,) = await client.diagnostics(uri)
        actions = await client.code_actions(uri, [leak], only=[types.CodeActionKind.QuickFix])
        fix = next(action for action in actions if "defer C.cudaFree(p)" in action.title)
        assert fix.is_preferred and fix.kind == types.CodeActionKind.QuickFix
        (change,) = fix.edit.document_changes
        assert (change.text_document.uri, change.text_document.version) == (uri, 1)
        assert apply_edits(LEAK, list(change.edits)) == RELEASED

        golden = (leaks / "leaks.go.golden").read_text()
        uri = client.open(module / "leaks.go")
        diagnostics = await client.diagnostics(uri)
        assert {d.code for d in diagnostics} == {"CL101"} and len(diagnostics) > 1
        (fix_all,) = await client.code_actions(uri, [], only=["source.fixAll"])
        assert fix_all.kind == "source.fixAll.cudalint"
        (change,) = fix_all.edit.document_changes
        fixed = apply_edits((module / "leaks.go").read_text(), list(change.edits))
        assert fixed == golden
        # Applied (as the editor would, unsaved): nothing left to fix.
        version = client.change(uri, fixed)
        assert await client.diagnostics(uri, version) == []

    run(scenario, module, [module])


def test_suppressing_with_a_reason_inserts_the_directive_and_selects_the_reason(tmp_path):
    module = _module(tmp_path / "svc", {"fill.go": LEAK})

    async def scenario(client: Client, init):
        uri = client.open(module / "fill.go")
        (leak,) = await client.diagnostics(uri)
        actions = await client.code_actions(uri, [leak])
        suppress = next(action for action in actions if action.title.startswith("Suppress CL101"))
        (change,) = suppress.edit.document_changes
        text = apply_edits(LEAK, list(change.edits))
        assert "\t//cudalint:ignore CL101 reason\n\tif st := C.cudaMalloc" in text
        command = suppress.command
        assert command.command == "cudalint.selectReason"
        selection = command.arguments[1]
        line = text.splitlines()[selection["start"]["line"]]
        assert line[selection["start"]["character"]:selection["end"]["character"]] == "reason"
        await client.client.workspace_execute_command_async(types.ExecuteCommandParams(
            command=command.command, arguments=list(command.arguments),
        ))
        shown = await client.until(lambda: client.shown)
        assert shown[0].uri == uri and shown[0].selection.start.character == selection["start"]["character"]
        # The directive (any reason) suppresses the finding.
        version = client.change(uri, text.replace("CL101 reason", "CL101 freed by the pool's reset"))
        assert await client.diagnostics(uri, version) == []
        # A directive without a reason is CL001, as on the command line.
        version = client.change(uri, text.replace("CL101 reason", "CL101"))
        assert {d.code for d in await client.diagnostics(uri, version)} == {"CL001", "CL101"}

    run(scenario, module, [module])


def test_a_syntax_error_while_typing_keeps_the_server_and_the_rest_of_the_file(tmp_path):
    module = _module(tmp_path / "svc", {"fill.go": LEAK})
    broken = LEAK + "\nfunc Half(n int) error {\n\tif n > {\n"

    async def scenario(client: Client, init):
        uri = client.open(module / "fill.go")
        await client.diagnostics(uri)
        version = client.change(uri, broken)
        diagnostics = await client.diagnostics(uri, version)
        assert "CL101" in [d.code for d in diagnostics]
        syntax = [d for d in diagnostics if d.code == "syntax-error"]
        assert syntax and syntax[0].range.start.line >= 16
        version = client.change(uri, RELEASED)
        assert await client.diagnostics(uri, version) == []
        assert client.messages == []

    run(scenario, module, [module])


def test_each_workspace_folder_has_its_configuration_reloaded_when_it_changes(tmp_path):
    noted = _module(tmp_path / "noted", {"fill.go": LEAK, ".cudalint.toml": 'level = { CL101 = "note" }\n'})
    ignored = _module(tmp_path / "ignored", {"fill.go": LEAK, ".cudalint.toml": 'ignore = ["CL1"]\n'})
    plain = _module(tmp_path / "plain", {"fill.go": LEAK})

    async def scenario(client: Client, init):
        assert any(r.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES for r in await client.until(lambda: client.registrations))
        uris = [client.open(folder / "fill.go") for folder in (noted, ignored, plain)]
        first = [await client.diagnostics(uri) for uri in uris]
        assert [[d.severity for d in found] for found in first] == [
            [types.DiagnosticSeverity.Information], [], [types.DiagnosticSeverity.Error],
        ]
        (ignored / ".cudalint.toml").write_text('level = { CL1 = "warning" }\n')
        count = len(client.published)
        client.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[types.FileEvent(
            uri=(ignored / ".cudalint.toml").as_uri(), type=types.FileChangeType.Changed,
        )]))
        again = await client.until(lambda: [p for p in client.published[count:] if p.uri == uris[1]])
        assert [d.severity for d in again[-1].diagnostics] == [types.DiagnosticSeverity.Warning]

    run(scenario, tmp_path, [noted, ignored, plain])


def test_a_configuration_error_is_shown_and_the_server_keeps_serving(tmp_path):
    module = _module(tmp_path / "svc", {"fill.go": LEAK, ".cudalint.toml": 'selct = ["CL1"]\n'})

    async def scenario(client: Client, init):
        client.open(module / "fill.go")
        messages = await client.until(lambda: client.messages)
        assert messages[0].type == types.MessageType.Error
        assert "unknown key 'selct'" in messages[0].message and "did you mean 'select'" in messages[0].message
        assert [list(p.diagnostics) for p in await client.until(lambda: client.published)] == [[]]
        (module / ".cudalint.toml").write_text('select = ["CL1"]\n')
        client.client.text_document_did_save(types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=(module / ".cudalint.toml").as_uri()),
        ))
        again = await client.until(lambda: client.published[1:])
        assert [d.code for d in again[0].diagnostics] == ["CL101"]

    run(scenario, module, [module])


def test_buffers_that_are_not_go_files_on_disk_are_left_alone(tmp_path):
    module = _module(tmp_path / "svc", {"fill.go": LEAK})

    async def scenario(client: Client, init):
        client.client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
            uri="untitled:Untitled-1", language_id="go", version=1, text=LEAK,
        )))
        client.open(module / "notes.md", "# notes\n")
        # A new file, never saved: analysed with its package.
        uri = client.open(module / "new.go", LEAK.replace("Fill", "Other"))
        assert [d.code for d in await client.diagnostics(uri)] == ["CL101"]
        assert not [p for p in client.published if not p.uri.endswith("new.go")]
        assert client.messages == []

    run(scenario, module, [module])


def test_a_newer_edit_cancels_the_analysis_in_flight(tmp_path):
    functions = "".join(
        f"\nfunc f{i}(n int) error {{\n\tvar p unsafe.Pointer\n\tif st := C.cudaMalloc(&p, C.size_t(n)); st != C.cudaSuccess {{\n"
        f"\t\treturn nil\n\t}}\n\treturn nil\n}}\n"
        for i in range(3000)
    )
    module = _module(tmp_path / "big", {"big.go": LEAK + functions})

    async def scenario(client: Client, init):
        uri = client.open(module / "big.go")
        await client.until(lambda: any("analysing big.go (version 1)" in line for line in client.logs))
        version = client.change(uri, RELEASED)
        assert await client.diagnostics(uri, version) == []
        assert any("cancelled the analysis" in line for line in client.logs)
        assert not [p for p in client.published if p.version == 1]
        # The spare process took over: the next edit is answered too.
        version = client.change(uri, LEAK)
        assert [d.code for d in await client.diagnostics(uri, version)] == ["CL101"]

    run(scenario, module, [module])


def test_the_server_imports_and_runs_nothing_from_the_workspace(tmp_path):
    """A workspace that plants modules named like cudalint's dependencies
    (and cudalint itself) next to its Go code: none is imported."""
    marker = tmp_path / "imported"
    plant = f"open({str(marker)!r}, 'a').write(__name__)\n"
    # Modules an analysis imports on first use (after it moved into the folder).
    names = ("networkx", "tree_sitter_c", "zipfile", "csv", "email", "calendar", "tomllib", "pygls")
    module = _module(tmp_path / "svc", {"fill.go": LEAK, **{f"{name}.py": plant for name in names}})
    (module / "cudalint").mkdir()
    (module / "cudalint" / "__init__.py").write_text(plant)

    async def scenario(client: Client, init):
        uri = client.open(module / "fill.go")
        assert [d.code for d in await client.diagnostics(uri)] == ["CL101"]

    # Started from outside the folder (`python -m` would put its own
    # directory on the path, as it does for any program; the editors run
    # the `cudalint` script): the analysis process works inside it.
    run(scenario, tmp_path, [module])
    assert not marker.exists()


def test_unsafe_fixes_are_offered_only_where_the_configuration_allows_them(tmp_path):
    constructors = FIXTURES / "fixes" / "constructors"
    module = _module(tmp_path / "ctor")
    shutil.copy(constructors / "constructors.go", module / "constructors.go")

    async def scenario(client: Client, init):
        uri = client.open(module / "constructors.go")
        diagnostics = await client.diagnostics(uri)
        assert diagnostics
        actions = await client.code_actions(uri, diagnostics)
        assert actions and all(action.title.startswith("Suppress") for action in actions)
        (module / ".cudalint.toml").write_text("unsafe-fixes = true\n")
        count = len(client.published)
        client.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[types.FileEvent(
            uri=(module / ".cudalint.toml").as_uri(), type=types.FileChangeType.Created,
        )]))
        (again,) = await client.until(lambda: client.published[count:])
        actions = await client.code_actions(uri, list(again.diagnostics))
        unsafe = [action for action in actions if "(unsafe" in action.title]
        assert unsafe and not any(action.is_preferred for action in unsafe)
        (fix_all,) = await client.code_actions(uri, [], only=["source.fixAll.cudalint"])
        (change,) = fix_all.edit.document_changes
        fixed = apply_edits((module / "constructors.go").read_text(), list(change.edits))
        assert fixed == (constructors / "constructors.go.golden").read_text()

    run(scenario, module, [module])


def test_closing_a_buffer_clears_its_diagnostics(tmp_path):
    module = _module(tmp_path / "svc", {"fill.go": LEAK})

    async def scenario(client: Client, init):
        uri = client.open(module / "fill.go")
        assert await client.diagnostics(uri)
        client.client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))
        cleared = await client.until(lambda: [p for p in client.published if p.uri == uri and not p.diagnostics])
        assert cleared[-1].version is None
        assert not await client.code_actions(uri, [])

    run(scenario, module, [module])


def test_saving_analyses_again_at_once(tmp_path):
    """A save needs no pause: the file on disk may have changed under the
    other buffers of its package (a formatter, a generator)."""
    module = _module(tmp_path / "svc", {"fill.go": LEAK})

    async def scenario(client: Client, init):
        uri = client.open(module / "fill.go")
        assert [d.code for d in await client.diagnostics(uri)] == ["CL101"]
        (module / "free.go").write_text("package gpu\n")
        client.client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))
        again = await client.until(lambda: [p for p in client.published[1:] if p.uri == uri])
        assert [d.code for d in again[0].diagnostics] == ["CL101"]
        assert sum("analysing fill.go (version 1)" in line for line in client.logs) == 2

    run(scenario, module, [module])
