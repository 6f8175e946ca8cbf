"""The application: what a user runs, on top of the pipeline.

`cli` (the click command) and `api` (`cudalint.check`) both make a run of
`session`, so that the library finds the same configuration and applies
the same baseline and change as the command line. Around the session:
`config`, `inputs` (the files), `gate` with `baseline` and `changes`,
`fixing`, `reporting`, `commands` (the runs of their own) and `entry`
(the process and its exit status). Nothing below this package imports it.
"""
