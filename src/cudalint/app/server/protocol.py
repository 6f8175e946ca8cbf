"""The language server: LSP messages in, analyses scheduled, diagnostics
and code actions out (pygls over stdio).

Every handler is guarded: whatever goes wrong in one message (a buffer
that is not Go, a configuration that cannot be used, a crash in a rule or
in the server itself) becomes a diagnostic, a `window/showMessage` or a
log line, and the server keeps serving.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable
from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from cudalint import __version__
from cudalint.app.server.actions import FIX_ALL, SELECT_COMMAND, Published, code_actions
from cudalint.app.server.analyst import Analyst
from cudalint.app.server.diagnostics import RuleDocs, about_the_file, diagnostic, notification_diagnostic
from cudalint.app.server.documents import Documents, uri_path
from cudalint.app.server.jobs import Job, Outcome
from cudalint.app.server.scheduler import Key, Scheduler
from cudalint.findings import NotificationKind
from cudalint.source import display_path

log = logging.getLogger("cudalint.server")

# Files whose change changes what a CLI run in the folder would do.
_CONFIGURATION = (".cudalint.toml", "pyproject.toml", "go.mod", "go.work")
_WATCHED = ("**/.cudalint.toml", "**/pyproject.toml", "**/go.mod", "**/go.work", "**/*.toml", "**/*.go")


class CudalintServer(LanguageServer):
    """The server's state: the buffers, the analyses, what was published."""

    def __init__(self) -> None:
        super().__init__("cudalint", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.documents = Documents()
        self.docs = RuleDocs()
        self.published: dict[str, Published] = {}
        self.said: set[str] = set()  # messages shown once
        self.scheduler: Scheduler | None = None

    # -- telling the user ---------------------------------------------------------

    def log_line(self, message: str, kind: types.MessageType = types.MessageType.Log) -> None:
        self.window_log_message(types.LogMessageParams(type=kind, message=f"cudalint: {message}"))

    def show_once(self, message: str, kind: types.MessageType = types.MessageType.Error) -> None:
        self.log_line(message, kind)
        if message not in self.said:
            self.said.add(message)
            self.window_show_message(types.ShowMessageParams(type=kind, message=f"cudalint: {message}"))

    # -- analyses -------------------------------------------------------------------

    def start(self, debounce: float) -> None:
        self.scheduler = Scheduler(Analyst(), self.make_job, self.publish, self.log_line, debounce)

    def key(self, path: Path) -> Key:
        return (self.documents.folder_of(path), path.parent)

    def make_job(self, key: Key) -> Job | None:
        job = self.documents.job(*key)
        if job is not None:
            self.log_line(f"analysing {', '.join(f'{p.name} (version {job.versions[p]})' for p in job.files)}")
        return job

    def analyse(self, path: Path, delay: float | None = None) -> None:
        if self.scheduler is not None:
            self.scheduler.schedule(self.key(path), delay)

    def analyse_all(self) -> None:
        """Again, every open buffer: the configuration (or the tree under
        it) changed, and the next analysis reads it afresh."""
        for key in sorted({self.key(buffer.path) for buffer in self.documents.buffers()}):
            if self.scheduler is not None:
                self.scheduler.schedule(key, 0)

    def publish(self, job: Job, outcome: Outcome, seconds: float) -> None:
        for note in outcome.notes:
            self.log_line(note.removeprefix("cudalint: "))
        if outcome.error is not None:
            self.show_once(outcome.error.removeprefix("cudalint: error: "))
        result = outcome.result
        for notification in result.notifications:
            if notification.kind is NotificationKind.INTERNAL_ERROR:
                self.show_once(notification.render(), types.MessageType.Warning)
            elif not about_the_file(notification):
                self.log_line(notification.render())
        for path in job.files:
            buffer = self.documents.get(path.as_uri())
            if buffer is None or buffer.path != path:
                buffer = next((b for b in self.documents.buffers() if b.path == path), None)
            if buffer is None:
                continue  # closed meanwhile
            shown = display_path(path, job.cwd)
            settings = outcome.settings.get(shown)
            published = Published(
                buffer.uri, path, job.versions.get(path), job.overlay.get(path, b""),
                settings.unsafe_fixes if settings is not None else False,
            )
            for finding in result.findings:
                if finding.path == shown:
                    level = settings.levels.get(finding.rule_id, "warning") if settings is not None else "warning"
                    published.pairs.append((diagnostic(finding, buffer.uri, level, self.docs), finding))
            about = [notification_diagnostic(n) for n in result.notifications if n.path == shown and about_the_file(n)]
            self.published[buffer.uri] = published
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
                uri=buffer.uri, version=published.version, diagnostics=[d for d, _ in published.pairs] + about,
            ))
        self.log_line(
            f"published the diagnostics of {', '.join(p.name for p in job.files)}: analysed in {seconds * 1000:.0f} ms "
            f"({outcome.cpu_seconds * 1000:.0f} ms of CPU)"
        )

    def close(self) -> None:
        if self.scheduler is not None:
            self.scheduler.close()
        self.docs.close()


def _guarded(handler: Callable) -> Callable:
    """A handler whose failure is told and logged, never fatal."""

    def report(server: CudalintServer, error: Exception) -> None:
        log.exception("handler %s failed", handler.__name__)
        server.show_once(f"internal error in {handler.__name__}: {type(error).__name__}: {error}")

    if inspect.iscoroutinefunction(handler):
        @functools.wraps(handler)
        async def guarded_async(server: CudalintServer, params):
            try:
                return await handler(server, params)
            except Exception as error:  # noqa: BLE001
                report(server, error)
                return None

        return guarded_async

    @functools.wraps(handler)
    def guarded(server: CudalintServer, params):
        try:
            return handler(server, params)
        except Exception as error:  # noqa: BLE001
            report(server, error)
            return None

    return guarded


def build() -> CudalintServer:
    """The server with its handlers."""
    server = CudalintServer()

    @server.feature(types.INITIALIZE)
    @_guarded
    def initialize(ls: CudalintServer, params: types.InitializeParams) -> None:
        options = params.initialization_options if isinstance(params.initialization_options, dict) else {}
        debounce = options.get("debounceMs", 200)
        ls.start(debounce / 1000 if isinstance(debounce, (int, float)) and not isinstance(debounce, bool) and debounce >= 0 else 0.2)
        folders = [folder.uri for folder in params.workspace_folders or []]
        if not folders and params.root_uri:
            folders = [params.root_uri]
        ls.documents.set_folders(folders)

    @server.feature(types.INITIALIZED)
    @_guarded
    async def initialized(ls: CudalintServer, params: types.InitializedParams) -> None:
        watched = ls.client_capabilities.workspace and ls.client_capabilities.workspace.did_change_watched_files
        if watched and watched.dynamic_registration:
            await ls.client_register_capability_async(types.RegistrationParams(registrations=[types.Registration(
                id="cudalint-watched-files", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                register_options=types.DidChangeWatchedFilesRegistrationOptions(
                    watchers=[types.FileSystemWatcher(glob_pattern=pattern) for pattern in _WATCHED],
                ),
            )]))

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    @_guarded
    def did_open(ls: CudalintServer, params: types.DidOpenTextDocumentParams) -> None:
        document = params.text_document
        buffer = ls.documents.update(document.uri, document.version, document.text)
        if buffer is not None:
            ls.analyse(buffer.path, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    @_guarded
    def did_change(ls: CudalintServer, params: types.DidChangeTextDocumentParams) -> None:
        document = ls.workspace.get_text_document(params.text_document.uri)
        buffer = ls.documents.update(document.uri, params.text_document.version, document.source)
        if buffer is not None:
            ls.analyse(buffer.path)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    @_guarded
    def did_save(ls: CudalintServer, params: types.DidSaveTextDocumentParams) -> None:
        path = uri_path(params.text_document.uri)
        if path is None:
            return
        if path.name in _CONFIGURATION or path.suffix == ".toml":
            ls.analyse_all()
        elif ls.documents.get(params.text_document.uri) is not None:
            ls.analyse(path, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    @_guarded
    def did_close(ls: CudalintServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        if ls.documents.close(uri) is not None:
            ls.published.pop(uri, None)
            ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    @_guarded
    def watched_files_changed(ls: CudalintServer, params: types.DidChangeWatchedFilesParams) -> None:
        if params.changes:
            ls.analyse_all()

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    @_guarded
    def folders_changed(ls: CudalintServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
        for folder in params.event.removed:
            ls.documents.remove_folder(folder.uri)
        for folder in params.event.added:
            ls.documents.add_folder(folder.uri)
        ls.analyse_all()

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL]),
    )
    @_guarded
    def code_action(ls: CudalintServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        published = ls.published.get(params.text_document.uri)
        buffer = ls.documents.get(params.text_document.uri)
        if published is None or buffer is None or buffer.version != published.version:
            return []  # edited since: the next diagnostics bring their actions
        window = ls.client_capabilities.window
        can_select = bool(window and window.show_document and window.show_document.support)
        return code_actions(published, params, can_select)

    @server.command(SELECT_COMMAND)
    async def select_reason(ls: CudalintServer, uri: str, selection: types.Range) -> None:
        """Select the placeholder reason a suppression just inserted."""
        try:
            await ls.window_show_document_async(types.ShowDocumentParams(uri=uri, take_focus=True, selection=selection))
        except Exception as error:  # noqa: BLE001 - a client that cannot show it keeps the text
            ls.log_line(f"could not select the reason: {error}")

    @server.feature(types.SHUTDOWN)
    @_guarded
    def shutdown(ls: CudalintServer, params: None) -> None:
        ls.close()

    return server
