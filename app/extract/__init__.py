"""Document extraction room (PDF, HTML, DOCX)."""
