"""Rules about cudalint's own input rather than the analysed code (CL0xx),
such as malformed or unused suppression directives. They are reported by
the findings stage (cudalint.suppressions), not by a pass."""

from __future__ import annotations

from cudalint.catalog import Level, Rule

CL001 = Rule(
    "CL001", "bad-suppression", Level.WARNING,
    "A `//cudalint:ignore` or `//cudalint:file-ignore` directive is malformed or suppresses nothing.",
    """
    ## What it does
    Reports suppression directives that are malformed or suppress nothing.
    Two directives exist, both `//` line comments:

    - `//cudalint:ignore CL101 <reason>` on a line of its own suppresses the
      listed rules on the next line that holds code (comment lines in between
      are skipped); at the end of a line of code, it suppresses them on that line.
    - `//cudalint:file-ignore CL3 <reason>` suppresses the listed rules in the
      whole file, wherever it stands (by convention near the top).

    Rules are listed by ID or by prefix (`CL3` is every CL3xx rule), separated
    by commas without spaces (`CL101,CL104`). The reason is free text after
    the rules, optionally introduced by `//` or `--`.

    It reports a directive that is **malformed**: an unknown verb
    (`//cudalint:disable`), no rules (blanket suppressions are not allowed),
    a rule ID or prefix that names no rule, a tool rule (CL0xx) as the target,
    or no reason. And one that is **unused**: it names a rule that is enabled
    for the file but there is no such finding on its line (or, for
    `file-ignore`, in its file). A rule that is disabled by `--select`,
    `--ignore` or the configuration is not reported as unused, so that one
    set of directives serves every selection.

    Only `//` line comments are directives; a directive cannot suppress CL001
    itself (use `ignore` or `per-file-ignores` in the configuration for that).

    ## Why is this bad?
    A suppression without a reason cannot be reviewed, and a malformed one
    silently suppresses nothing while its author believes the finding is
    handled. An unused suppression is dead weight that will hide the next,
    real finding on that line; it usually means the code was fixed or moved.

    ## Example
    ```go
    C.cudaDeviceSynchronize() //cudalint:ignore CL301
    ```

    ## Use instead
    ```go
    C.cudaDeviceSynchronize() //cudalint:ignore CL301 shutdown path: the device is reset right after
    ```
    """,
    tags=("suppression",),
)

TOOL_RULES: tuple[Rule, ...] = (CL001,)
