"""Documents beside notebooks: reports, standards and service notes, split along their own
structure into blocks that are cited the way one reads them aloud.

One module per format family, each a pure function from a file's bytes to an `Extracted`
(`cellar.ingest.documents.blocks`): the text extracted from the file and its blocks, each with
its heading path, its kind and its exact offsets into that text.

    blocks     Block, Extracted, Unit; `assemble` (units -> blocks with citations)
    lines      Markdown and plain text with numbered headings (pure Python: also in Pyodide)
    markup     HTML (the standard library's html.parser)
    pdf        PDF with a text layer (pypdf, imported when a PDF is met)
    word       DOCX (python-docx, imported when a DOCX is met)
    clauses    clause collections: XML (defusedxml) or JSON with article / sub-article / note
    notes      records: service notes as CSV or JSON Lines, one block per note
    extract    which parser a file name picks, and the suffixes it knows
"""
