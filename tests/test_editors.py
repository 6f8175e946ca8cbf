"""The editor set-ups docs/editors.md gives: Neovim's built-in client
(Debian's 0.7, `vim.lsp.start_client`) run headless against the real
server, and the VS Code extension's packaging (no network: its manifest,
its entry point, and that it starts the server this cudalint has)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lspclient import SRC
from test_server import LEAK, _module

ROOT = Path(__file__).resolve().parents[1]
VSCODE = ROOT / "editors" / "vscode"
HERE = Path(__file__).resolve().parent / "editors"


@pytest.mark.skipif(shutil.which("nvim") is None, reason="Neovim is not installed (.ci/run installs Debian's neovim where it can)")
def test_neovim_shows_the_servers_diagnostics(tmp_path):
    module = _module(tmp_path / "svc", {"fill.go": LEAK})
    out = tmp_path / "diagnostics.json"
    env = dict(
        os.environ, CUDALINT_NVIM_OUT=str(out), CUDALINT_NVIM_ROOT=str(module),
        CUDALINT_NVIM_CMD=json.dumps([sys.executable, "-m", "cudalint", "--server"]),
        PYTHONPATH=os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")])),
        XDG_CONFIG_HOME=str(tmp_path / "config"), XDG_DATA_HOME=str(tmp_path / "data"), XDG_STATE_HOME=str(tmp_path / "state"),
    )
    done = subprocess.run(
        ["nvim", "--headless", "-n", "-i", "NONE", "-u", str(HERE / "nvim_init.lua"), "fill.go", "-c", f"luafile {HERE / 'nvim_collect.lua'}"],
        cwd=module, env=env, capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL,
    )
    assert out.exists(), done.stderr
    report = json.loads(out.read_text())
    assert report["waited"], done.stderr
    (leak,) = report["diagnostics"]
    assert (leak["code"], leak["lnum"], leak["col"], leak["end_col"], leak["severity"]) == ("CL101", 11, 10, 39, 1)
    assert leak["source"].startswith("cudalint")


def _manifest() -> dict:
    return json.loads((VSCODE / "package.json").read_text())


def test_the_vscode_manifest_is_complete():
    manifest = _manifest()
    for key in ("name", "displayName", "description", "version", "publisher", "engines", "main", "activationEvents", "contributes"):
        assert manifest.get(key), key
    assert re.fullmatch(r"\^\d+\.\d+\.\d+", manifest["engines"]["vscode"])
    assert "onLanguage:go" in manifest["activationEvents"]
    assert "vscode-languageclient" in manifest["dependencies"]
    main = (VSCODE / manifest["main"]).resolve()
    assert main.is_file() and VSCODE in main.parents
    from cudalint import __version__

    assert manifest["version"] == __version__


def test_the_vscode_extension_starts_the_server_this_cudalint_has():
    source = (VSCODE / _manifest()["main"]).read_text()
    assert re.search(r'SERVER_ARGS = \["--server"\]', source)
    assert 'require("vscode-languageclient/node")' in source
    assert re.search(r"documentSelector: \[\{ scheme: \"file\", language: \"go\" \}\]", source)
    # Every command the manifest contributes is registered, and the settings it reads are declared.
    manifest = _manifest()
    for command in manifest["contributes"]["commands"]:
        assert f'registerCommand("{command["command"]}"' in source
    declared = set(manifest["contributes"]["configuration"]["properties"])
    read = {f"cudalint.{name}" for name in re.findall(r'config\.get\("(\w+)"\)', source)}
    assert read and read <= declared
    assert manifest["contributes"]["configuration"]["properties"]["cudalint.path"]["default"] == "cudalint"
    helped = subprocess.run([sys.executable, "-m", "cudalint", "--help"], capture_output=True, text=True, timeout=60)
    assert "--server" in helped.stdout


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
def test_the_vscode_extension_is_valid_javascript():
    done = subprocess.run(["node", "--check", str(VSCODE / "extension.js")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_the_editors_page_covers_each_editor_and_the_readme_links_it():
    page = (ROOT / "docs" / "editors.md").read_text()
    for needle in ("vim.lsp.start_client", "vim.lsp.start(", "languages.toml", "eglot-server-programs", "editors/vscode", "--stdin-filename"):
        assert needle in page, needle
    assert "docs/editors.md" in (ROOT / "README.md").read_text()
