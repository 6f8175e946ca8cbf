"""A real LSP client (pytest-lsp's, on pygls) driving `cudalint --server`
over stdio, with what the tests wait for: the diagnostics of a given
version of a buffer, log lines, messages and shown documents."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from typing import Union

from lsprotocol import types
from pygls.protocol import default_converter
from pytest_lsp import LanguageClient

SRC = Path(__file__).resolve().parents[1] / "src"
TIMEOUT = 90.0


def apply_edits(text: str, edits: list[types.TextEdit]) -> str:
    """The text after LSP edits (UTF-16 positions; ASCII fixtures)."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(position: types.Position) -> int:
        return starts[position.line] + position.character if position.line < len(starts) else len(text)

    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end):]
    return text


def _converter():
    """pygls's converter, but a code action that carries both an edit and
    a command (LSP allows it: the edit is applied, then the command runs)
    stays a CodeAction: lsprotocol's own hook takes any object with a
    `command` key for a Command, which VS Code and Neovim do not."""
    converter = default_converter()

    def code_action_or_command(value: Any, _: type) -> types.Command | types.CodeAction:
        if isinstance(value.get("command"), str):
            return converter.structure(value, types.Command)
        return converter.structure(value, types.CodeAction)

    converter.register_structure_hook(Union[types.Command, types.CodeAction], code_action_or_command)
    return converter


class Client:
    """One server process and the client talking to it."""

    def __init__(self) -> None:
        self.client = LanguageClient(converter_factory=_converter)
        self.published: list[types.PublishDiagnosticsParams] = []
        self.logs: list[str] = []
        self.messages: list[types.ShowMessageParams] = []
        self.shown: list[types.ShowDocumentParams] = []
        self.registrations: list[types.Registration] = []
        self.versions: dict[str, int] = {}
        self._changed = asyncio.Event()
        self._install()

    def _install(self) -> None:
        client = self.client

        @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def diagnostics(params: types.PublishDiagnosticsParams) -> None:
            self.published.append(params)
            self._changed.set()

        @client.feature(types.WINDOW_LOG_MESSAGE)
        def log(params: types.LogMessageParams) -> None:
            self.logs.append(params.message)
            self._changed.set()

        @client.feature(types.WINDOW_SHOW_MESSAGE)
        def show(params: types.ShowMessageParams) -> None:
            self.messages.append(params)
            self._changed.set()

        @client.feature(types.WINDOW_SHOW_DOCUMENT)
        def show_document(params: types.ShowDocumentParams) -> types.ShowDocumentResult:
            self.shown.append(params)
            self._changed.set()
            return types.ShowDocumentResult(success=True)

        @client.feature(types.CLIENT_REGISTER_CAPABILITY)
        def register(params: types.RegistrationParams) -> None:
            self.registrations += params.registrations
            self._changed.set()

    async def start(self, cwd: Path, folders: list[Path], options: dict[str, Any] | None = None) -> types.InitializeResult:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")])))
        await self.client.start_io(sys.executable, "-m", "cudalint", "--server", cwd=str(cwd), env=env)
        capabilities = types.ClientCapabilities(
            window=types.WindowClientCapabilities(show_document=types.ShowDocumentClientCapabilities(support=True)),
            workspace=types.WorkspaceClientCapabilities(
                did_change_watched_files=types.DidChangeWatchedFilesClientCapabilities(dynamic_registration=True),
                workspace_folders=True,
            ),
            text_document=types.TextDocumentClientCapabilities(
                publish_diagnostics=types.PublishDiagnosticsClientCapabilities(related_information=True, version_support=True),
            ),
        )
        return await self.client.initialize_session(types.InitializeParams(
            capabilities=capabilities, root_uri=folders[0].as_uri() if folders else None,
            workspace_folders=[types.WorkspaceFolder(uri=f.as_uri(), name=f.name) for f in folders],
            initialization_options={"debounceMs": 50, **(options or {})},
        ))

    async def stop(self) -> None:
        try:
            await asyncio.wait_for(self.client.shutdown_session(), 30)
        finally:
            await self.client.stop()

    # -- buffers ---------------------------------------------------------------

    def open(self, path: Path, text: str | None = None) -> str:
        uri = path.as_uri()
        self.versions[uri] = 1
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
            uri=uri, language_id="go", version=1, text=path.read_text() if text is None else text,
        )))
        return uri

    def change(self, uri: str, text: str) -> int:
        """Replace the buffer's text (unsaved); its new version."""
        self.versions[uri] += 1
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        ))
        return self.versions[uri]

    # -- waiting ---------------------------------------------------------------

    async def until(self, condition, timeout: float = TIMEOUT):
        """Wait until `condition()` is truthy, and return it."""
        async def wait():
            while not (value := condition()):
                self._changed.clear()
                await self._changed.wait()
            return value

        return await asyncio.wait_for(wait(), timeout)

    async def diagnostics(self, uri: str, version: int | None = None) -> list[types.Diagnostic]:
        """The diagnostics published for this version of the buffer
        (default: its latest)."""
        wanted = self.versions[uri] if version is None else version
        found = await self.until(lambda: next(
            (p for p in reversed(self.published) if p.uri == uri and p.version == wanted), None,
        ))
        return list(found.diagnostics)

    async def code_actions(self, uri: str, diagnostics: list[types.Diagnostic], only: list[str] | None = None) -> list:
        end = max((d.range.end for d in diagnostics), key=lambda p: (p.line, p.character), default=types.Position(line=0, character=0))
        return await self.client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(start=types.Position(line=0, character=0), end=end),
            context=types.CodeActionContext(diagnostics=diagnostics, only=only),
        ))
