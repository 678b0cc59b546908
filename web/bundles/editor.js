// CodeMirror 6 with Python support, bundled by build.py into site/bundles/editor.js.
import { basicSetup } from "codemirror";
import { EditorView, keymap } from "@codemirror/view";
import { EditorState, Prec } from "@codemirror/state";
import { indentWithTab } from "@codemirror/commands";
import { python } from "@codemirror/lang-python";

// An editor in `parent`; `onChange(text)` after every edit, `onRun()` on Ctrl/Cmd+Enter.
// Tab indents; Escape then Tab moves focus on (CodeMirror's accessible tab handling).
export function createEditor(parent, { doc = "", onChange = () => {}, onRun = () => {}, label = "Python code" } = {}) {
  const view = new EditorView({
    parent,
    state: EditorState.create({
      doc,
      extensions: [
        basicSetup,
        python(),
        // Highest precedence: basicSetup binds Mod-Enter (insert a blank line) too.
        Prec.highest(keymap.of([{ key: "Mod-Enter", run: () => { onRun(); return true; } }])),
        keymap.of([indentWithTab]),
        EditorView.updateListener.of((update) => { if (update.docChanged) onChange(update.state.doc.toString()); }),
        EditorView.contentAttributes.of({ "aria-label": label }),
      ],
    }),
  });
  return {
    view,
    getText: () => view.state.doc.toString(),
    setText: (text) => view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } }),
    focus: () => view.focus(),
  };
}
