-- Wait for the buffer's diagnostics, write them as JSON, quit.
local out = os.getenv("CUDALINT_NVIM_OUT")
local ok = vim.wait(60000, function() return #vim.diagnostic.get(0) > 0 end, 100)
local found = {}
for _, d in ipairs(vim.diagnostic.get(0)) do
  table.insert(found, { lnum = d.lnum, col = d.col, end_col = d.end_col, code = d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code), severity = d.severity, source = d.source, message = d.message })
end
local f = io.open(out, "w")
f:write(vim.fn.json_encode({ waited = ok, diagnostics = found }))
f:close()
vim.cmd("qa!")
