-- The files of a queued message, as Discord described them (JSON text: name, CDN address,
-- size, declared type), so a message answered after a restart still shows its images and text
-- files to the model (issue 14). Never indexed: it is unbounded text.
ALTER TABLE queued_messages ADD COLUMN attachments TEXT NOT NULL DEFAULT '[]';
