# The Markdown of docs/module.md, as much of it as it uses, to man(7) roff: `##`/`###` headings,
# paragraphs, `- ` bullets with indented continuation lines, fenced code, tables, `code` and
# **bold**. Used by scripts/man-pages.sh; sections are picked there, this only translates.

# Backslashes, and the manual's non-ASCII characters as roff's named glyphs, which every output
# device can draw (a UTF-8 character has no glyph in an ASCII terminal's C locale).
function escape(text) {
    gsub(/\\/, "\\e", text)
    gsub(/…/, "...", text); gsub(/→/, "\\(->", text); gsub(/−/, "\\-", text); gsub(/–/, "\\(en", text)
    gsub(/—/, "\\(em", text); gsub(/µ/, "\\(mc", text); gsub(/×/, "\\(mu", text); gsub(/±/, "\\(+-", text)
    gsub(/°/, "\\(de", text); gsub(/·/, "\\(pc", text); gsub(/≈/, "\\(~~", text); gsub(/≤/, "\\(<=", text)
    gsub(/≥/, "\\(>=", text); gsub(/²/, "\\(S2", text)
    return text
}
function inline(text) {
    text = escape(text)
    gsub(/\*\*/, "\001", text)                          # **bold**
    while (match(text, /\001[^\001]*\001/)) {
        text = substr(text, 1, RSTART - 1) "\\fB" substr(text, RSTART + 1, RLENGTH - 2) "\\fR" substr(text, RSTART + RLENGTH)
    }
    while (match(text, /`[^`]*`/)) {                     # `code`
        text = substr(text, 1, RSTART - 1) "\\fB" substr(text, RSTART + 1, RLENGTH - 2) "\\fR" substr(text, RSTART + RLENGTH)
    }
    if (text ~ /^[.']/) text = "\\&" text             # a line starting with . or ' is not a request
    return text
}
function line_out(text) { print inline(text) }

BEGIN { in_code = 0; in_list = 0 }
/^```/ {
    if (in_code) { print ".fi"; print ".RE"; in_code = 0 } else { print ".PP"; print ".RS 4"; print ".nf"; in_code = 1 }
    next
}
in_code { line = escape($0); if (line ~ /^[.']/) line = "\\&" line; print line; next }
/^## / { sub(/^## /, ""); print ".SH \"" toupper($0) "\""; in_list = 0; next }
/^### / { sub(/^### /, ""); print ".SS \"" $0 "\""; in_list = 0; next }
/^\|[-| ]+\|$/ { next }                               # a table's rule
/^\|/ {                                                # a table row: first cell as the tag
    row = $0; sub(/^\| */, "", row); sub(/ *\|$/, "", row)
    n = split(row, cells, / *\| */)
    print ".TP"; line_out(cells[1])
    rest = cells[2]; for (i = 3; i <= n; i++) rest = rest " \001EM " cells[i]
    rest = inline(rest); gsub(/\001EM/, "\\(em", rest); print rest
    next
}
/^- / { sub(/^- /, ""); print ".IP \\(bu 2"; line_out($0); in_list = 1; next }
/^$/ { print ".PP"; in_list = 0; next }
in_list && /^  / { sub(/^ +/, ""); line_out($0); next }
{ line_out($0) }
