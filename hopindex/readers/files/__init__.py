"""Document files (PDF, HTML, DOCX, Markdown, text): one parser module per format.

``model.py`` is what a parser gives (blocks in reading order), ``reading.py`` picks
the parser by the file's content, and ``splitting.py`` makes documents of the blocks.
"""
