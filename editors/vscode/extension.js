// The cudalint extension for VS Code: it starts `cudalint --server` (the
// Language Server Protocol over stdio) for Go files and lets
// vscode-languageclient do the rest: diagnostics, quick fixes, fix-all on
// save ("source.fixAll.cudalint"), suppressing with a reason.
"use strict";

const vscode = require("vscode");
const { LanguageClient, TransportKind } = require("vscode-languageclient/node");

// The server command; tests/test_editors.py checks that it is this one.
const SERVER_ARGS = ["--server"];

let client;

function serverOptions() {
  const config = vscode.workspace.getConfiguration("cudalint");
  const command = config.get("path") || "cudalint";
  return { command, args: SERVER_ARGS, transport: TransportKind.stdio };
}

function clientOptions() {
  const config = vscode.workspace.getConfiguration("cudalint");
  return {
    documentSelector: [{ scheme: "file", language: "go" }],
    initializationOptions: { debounceMs: config.get("debounceMs") },
    synchronize: {
      fileEvents: vscode.workspace.createFileSystemWatcher("**/{.cudalint.toml,pyproject.toml,go.mod,go.work}"),
    },
  };
}

async function start() {
  client = new LanguageClient("cudalint", "cudalint", serverOptions(), clientOptions());
  await client.start();
}

async function activate(context) {
  context.subscriptions.push(
    vscode.commands.registerCommand("cudalint.restart", async () => {
      if (client) {
        await client.stop();
      }
      await start();
    }),
  );
  await start();
}

async function deactivate() {
  if (client) {
    await client.stop();
  }
}

module.exports = { activate, deactivate };
