-- How a server's replies are cut into messages (SPEC C4), chosen by a moderator with /replies:
-- 'paragraphs' or 'compact'; NULL follows the deployment's turn.reply_style.
ALTER TABLE server_settings ADD COLUMN reply_style TEXT;
