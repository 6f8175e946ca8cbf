-- Neovim 0.7's built-in LSP client (vim.lsp.start_client, Debian's
-- version), set up as docs/editors.md says, for tests/test_editors.py.
local root = os.getenv("CUDALINT_NVIM_ROOT")
local cmd = vim.fn.json_decode(os.getenv("CUDALINT_NVIM_CMD"))
local client_id = vim.lsp.start_client({
  name = "cudalint",
  cmd = cmd,
  root_dir = root,
  workspace_folders = {{ uri = vim.uri_from_fname(root), name = "root" }},
  init_options = { debounceMs = 50 },
})
vim.api.nvim_create_autocmd("FileType", {
  pattern = "go",
  callback = function(args) vim.lsp.buf_attach_client(args.buf, client_id) end,
})
