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

// A Markdown table made from a table's text (a search hit): its cells are text, never markup, nor a
// link (markdown-it's "zero" preset parses nothing but paragraphs, and the table is turned on).
const plainMarkdown = new MarkdownIt("zero").enable("table");
export function renderTable(text) {
  return sanitize(plainMarkdown.render(text));
}

// Highlighted HTML for code (escaped by highlight.js itself).
export function highlightPython(code) {
  return hljs.highlight(code, { language: "python", ignoreIllegals: true }).value;
}

// --- The sanitiser -------------------------------------------------------------------------------
//
// Archive content is hostile until shown otherwise: an output's HTML or a markdown cell must not
// run code (DOMPurify's own job), load anything from anywhere (a remote image is a tracking pixel
// that tells another host who reads which notebook), offer a form to type into, or stand in for
// the page's own elements. On top of DOMPurify's defaults this drops:
// - <style> and style attributes (CSS can fetch and exfiltrate; the page's CSS styles outputs);
// - forms and their controls, media (<video>, <audio>, <source>, <track>, <picture>), and
//   everything that embeds another document or resource (DOMPurify drops most already);
// - every attribute that makes the browser fetch something (srcset, poster, background, ping,
//   lowsrc, ...), and src / href / xlink:href on anything but a link unless it is a data: image
//   (or, for SVG references, a fragment): so images come only from the notebook itself (its
//   attachments and outputs are data: URIs), and a markdown image with a remote URL is dropped;
// - CSS url() in SVG presentation attributes (fill, filter, mask, ...) unless it names a
//   fragment or a data: URI, any other CSS function given a string there (image-set('x.png' 1x),
//   -webkit-image-set(), image(), src(): each fetches it), and any such attribute with a CSS
//   escape in it;
// - <dialog> (drawn open above the page, outside its output); class (the page's own styles: a
//   fake warning or status) but a fenced code block's language-*; what names or works the page's
//   elements from the content: for (a <label> that presses the viewer's buttons), popover
//   targets and commands; and download (a link that saves a file of the site's under a name the
//   notebook chose, `report.pdf.exe`);
// and it prefixes every id and name with "user-content-" (DOMPurify's SANITIZE_NAMED_PROPS; fragment
// links inside the content follow), so an output's id="cell-2" can never be the cell a citation
// scrolls to, nor name="cellar" clobber a global. Links stay links, opened without a referrer.
const ID_PREFIX = "user-content-";
const FORBID_TAGS = [
  "style", "link", "meta", "base", "iframe", "frame", "frameset", "object", "embed", "portal",
  "form", "input", "button", "textarea", "select", "option", "optgroup", "datalist", "keygen",
  "video", "audio", "source", "track", "picture", "image", "feimage", "dialog",
];
const FORBID_ATTR = [
  "style", "srcset", "imagesrcset", "poster", "background", "ping", "action", "formaction",
  "lowsrc", "dynsrc", "longdesc", "manifest", "codebase", "archive", "nonce", "autofocus",
  "for", "popover", "popovertarget", "popovertargetaction", "commandfor", "command", "download",
];
// Attributes whose value is a URL the browser fetches (on anything that is not a link).
const URL_ATTRS = new Set(["src", "href", "xlink:href", "data", "cite"]);
const LINKS = new Set(["a", "area"]);
const DATA_IMAGE = /^data:image\/[a-z0-9.+-]+[;,]/i;
const CSS_URL = /url\s*\(\s*(['"]?)\s*([^'")\s]*)/gi;
const CSS_URL_WHOLE = /url\s*\([^)]*\)/gi;
const CSS_STRING_ARGUMENT = /\(\s*['"]/;  // a function given a string, outside url()
const XHTML = "http://www.w3.org/1999/xhtml";
const CODE_LANGUAGE = /^language-[\w+-]+$/;

const purify = DOMPurify(window);

// A fragment reference into the content, following the prefixed ids.
const fragment = (value) => `#${ID_PREFIX}${value.slice(1).replace(new RegExp(`^${ID_PREFIX}`), "")}`;

purify.addHook("uponSanitizeAttribute", (node, data) => {
  const name = data.attrName;
  const value = data.attrValue ?? "";
  const tag = (node.localName ?? "").toLowerCase();
  if (name === "class") {  // markdown-it's mark of a fenced block's language, and no other
    if (!(tag === "code" && CODE_LANGUAGE.test(value))) data.keepAttr = false;
    return;
  }
  if (URL_ATTRS.has(name)) {
    if (LINKS.has(tag) && (name === "href" || name === "xlink:href")) {
      if (value.startsWith("#")) data.attrValue = fragment(value);
      return;  // a link; DOMPurify drops javascript: and other unsafe schemes
    }
    if (value.startsWith("#") && name !== "src") data.attrValue = fragment(value);  // SVG references
    else if (!(name === "src" && tag === "img" && DATA_IMAGE.test(value))) data.keepAttr = false;
    return;
  }
  if (node.namespaceURI !== XHTML && (value.includes("\\") || CSS_STRING_ARGUMENT.test(value.replace(CSS_URL_WHOLE, "")))) {
    data.keepAttr = false;  // a CSS escape could spell url( past the check below; image-set('x') fetches
    return;
  }
  if (/url\s*\(/i.test(value)) {
    let safe = true;
    data.attrValue = value.replace(CSS_URL, (whole, quote, target) => {
      if (target.startsWith("#")) return `url(${quote}${fragment(target)}`;
      if (!DATA_IMAGE.test(target)) safe = false;
      return whole;
    });
    if (!safe) data.keepAttr = false;
  }
});

purify.addHook("afterSanitizeAttributes", (node) => {
  const tag = (node.localName ?? "").toLowerCase();
  if (LINKS.has(tag) && node.hasAttribute("href") && !node.getAttribute("href").startsWith("#")) {
    node.setAttribute("rel", "noopener noreferrer");
  }
  if (node.hasAttribute("target")) node.removeAttribute("target");
});

const CONFIG = { FORBID_TAGS, FORBID_ATTR, SANITIZE_NAMED_PROPS: true };

// HTML from a notebook (text/html outputs, rendered markdown): nothing runs, nothing is fetched.
export function sanitize(html) {
  return purify.sanitize(html, CONFIG);
}
