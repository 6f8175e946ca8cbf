"""Code actions on the findings of the last analysis of a buffer: each
finding's fixes (an unsafe one marked so, and offered only where the
file's configuration says `unsafe-fixes = true`), every safe fix of the
file at once (`source.fixAll.cudalint`), and suppressing a finding with a
`//cudalint:ignore RULE reason` line above it, the reason selected for the
user to type. Edits are computed on the text that was analysed and name
its version: an editor that changed the buffer since refuses them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from lsprotocol import types

from cudalint.app.addignore import Unplaceable, directive, line_starts
from cudalint.findings import Finding, Fix, TextEdit
from cudalint.fixes import editing
from cudalint.source import SourceFile
from cudalint.suppressions import TOOL_RULE

FIX_ALL = f"{types.CodeActionKind.SourceFixAll.value}.cudalint"
SELECT_COMMAND = "cudalint.selectReason"
REASON = "reason"


@dataclass
class Published:
    """What the diagnostics of one buffer were made from."""

    uri: str
    path: Path
    version: int | None
    data: bytes  # the text analysed
    unsafe_fixes: bool
    pairs: list[tuple[types.Diagnostic, Finding]] = field(default_factory=list)

    def position(self, offset: int) -> types.Position:
        where = SourceFile(self.path, self.path.name, self.data).offset_position(offset)
        return types.Position(line=where.line - 1, character=where.column_utf16 - 1)

    def edit(self, edits: list[TextEdit]) -> types.WorkspaceEdit:
        return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(
            text_document=types.OptionalVersionedTextDocumentIdentifier(uri=self.uri, version=self.version),
            edits=[
                types.TextEdit(range=types.Range(start=self.position(e.start), end=self.position(e.end)), new_text=e.text)
                for e in sorted(edits, key=lambda e: (e.start, e.end))
            ],
        )])

    def offered(self, fix: Fix) -> bool:
        return fix.safe or self.unsafe_fixes


def _same(a: types.Diagnostic, b: types.Diagnostic) -> bool:
    return a.code == b.code and a.range == b.range and a.message == b.message


def code_actions(published: Published, params: types.CodeActionParams, can_select: bool) -> list[types.CodeAction]:
    """The actions for the diagnostics the editor names, and the file's
    fix-all, filtered by the kinds it asks for."""
    wanted = params.context.only
    actions: list[types.CodeAction] = []
    if _wants(wanted, types.CodeActionKind.QuickFix):
        for asked in params.context.diagnostics:
            for shown, finding in published.pairs:
                if _same(asked, shown):
                    actions += _fixes(published, shown, finding)
                    suppress = _suppression(published, shown, finding, can_select)
                    if suppress is not None:
                        actions.append(suppress)
    if _wants(wanted, FIX_ALL):
        fix_all = _fix_all(published)
        if fix_all is not None:
            actions.append(fix_all)
    return actions


def _wants(only: list[str] | None, kind: str) -> bool:
    """LSP's hierarchy: asking for `source` or `source.fixAll` includes
    `source.fixAll.cudalint`."""
    return only is None or any(kind == asked or kind.startswith(asked + ".") for asked in only)


def _fixes(published: Published, shown: types.Diagnostic, finding: Finding) -> list[types.CodeAction]:
    actions = []
    for fix in finding.fixes:
        if not published.offered(fix):
            continue
        title = f"{fix.message} ({finding.rule_id})" + ("" if fix.safe else " (unsafe: review it)")
        actions.append(types.CodeAction(
            title=title, kind=types.CodeActionKind.QuickFix, diagnostics=[shown],
            is_preferred=fix.safe, edit=published.edit(list(fix.edits)),
        ))
    return actions


def _fix_all(published: Published) -> types.CodeAction | None:
    """Every fix offered in the file, as one edit (overlapping ones are left
    for the next time: the command line's first --fix round)."""
    findings = [finding for _, finding in published.pairs if finding.fixes]
    if not findings:
        return None
    plan = editing.plan(findings, unsafe=published.unsafe_fixes)
    edits = [edit for path_edits in plan.edits.values() for edit in path_edits]
    if not edits:
        return None
    return types.CodeAction(title="Fix all cudalint findings", kind=FIX_ALL, edit=published.edit(edits))


def _suppression(published: Published, shown: types.Diagnostic, finding: Finding, can_select: bool) -> types.CodeAction | None:
    """`//cudalint:ignore RULE reason` above the finding's line, the word
    `reason` selected afterwards (window/showDocument) where the editor
    can: the reason is required, and only the user knows it."""
    if finding.rule_id.startswith(TOOL_RULE[:3]) or finding.suppression is not None:
        return None
    from cudalint.parse import parse

    line = finding.span.start.line
    starts = line_starts(published.data)
    if not 1 <= line <= len(starts):
        return None
    root = parse(SourceFile(published.path, published.path.name, published.data))[0].root
    try:
        edit = directive(root, published.data, starts, line, [finding.rule_id], REASON)
    except Unplaceable:
        return None
    text = edit.text.rstrip("\r\n")
    column = len(text.encode("utf-16-le")) // 2
    reason = types.Range(
        start=types.Position(line=line - 1, character=column - len(REASON)), end=types.Position(line=line - 1, character=column),
    )
    command = types.Command(title="Type the reason", command=SELECT_COMMAND, arguments=[published.uri, reason]) if can_select else None
    return types.CodeAction(
        title=f"Suppress {finding.rule_id} on this line with a reason", kind=types.CodeActionKind.QuickFix,
        diagnostics=[shown], edit=published.edit([edit]), command=command,
    )
