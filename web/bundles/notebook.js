// Markdown, code highlighting and HTML sanitising for notebook cells and outputs, bundled by
// build.py into site/bundles/notebook.js.
import MarkdownIt from "markdown-it";
import hljs from "highlight.js/lib/core";
import python from "highlight.js/lib/languages/python";
import DOMPurify from "dompurify";

hljs.registerLanguage("python", python);

// Notebook markdown may hold raw HTML; it is rendered, then sanitised like any output.
const markdown = new MarkdownIt({ html: true, linkify: true });

export function renderMarkdown(text) {
  return sanitize(markdown.render(text));
}

// Highlighted HTML for code (escaped by highlight.js itself).
export function highlightPython(code) {
  return hljs.highlight(code, { language: "python", ignoreIllegals: true }).value;
}

// HTML from a notebook (text/html outputs, rendered markdown) without scripts or handlers.
export function sanitize(html) {
  return DOMPurify.sanitize(html, { FORBID_TAGS: ["style"], FORBID_ATTR: ["style"] });
}
