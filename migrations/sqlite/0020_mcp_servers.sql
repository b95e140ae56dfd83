-- Outside tools (SPEC E4): the MCP servers whose tools a server turned on with /tools mcp, one
-- name a line; none by default.
ALTER TABLE server_settings ADD COLUMN mcp_servers TEXT NOT NULL DEFAULT '';
