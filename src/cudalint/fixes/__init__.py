"""Fixes: everything that turns a finding into changed source, apart from
the rules that decide what to propose.

- `placement`: where a fix puts a statement (after the acquisition's success
  check, at the indentation of its block), and the edits that insert, move or
  delete one line;
- `header_rewrite`: CL503's rewrites of reflect.SliceHeader / StringHeader
  shapes into unsafe.Slice, unsafe.String and friends;
- `gofmt`: how gofmt spaces an expression a fix moves to another depth;
- `editing`: the edits of a run's findings planned into rounds, applied to
  bytes, shown as a unified diff;
- `rewrite`: the one way a source file is written (only an analysed file,
  under its lock, atomically, while it still holds the bytes analysed).

Rules import the first three to build their `Fix`es; the application
(`--fix`, `--diff`, `--add-ignore`) imports the last two. Nothing here
imports a rule or the application.
"""
