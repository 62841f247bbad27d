/**
 * flow-kernel-lab: syntax highlighting for Flow cells and `.flow` files in
 * JupyterLab 4. The kernel's language_info names `codemirror_mode: "flow"` and
 * mimetype `text/x-flow`; this plugin registers that language with CodeMirror.
 * The second (./liveview) shows a run's live view saved mid-run, whose widget model is gone.
 */
import type { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { IEditorLanguageRegistry } from '@jupyterlab/codemirror';

import { liveViewPlugin } from './liveview';

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'flow-kernel-lab:language',
  description: 'Flow language support (syntax highlighting) for the Flow kernel.',
  autoStart: true,
  requires: [IEditorLanguageRegistry],
  activate: (_app: JupyterFrontEnd, languages: IEditorLanguageRegistry): void => {
    languages.addLanguage({
      name: 'flow',
      displayName: 'Flow',
      mime: 'text/x-flow',
      extensions: ['flow'],
      load: async () => {
        const [cm, { tags }, { flowMode }] = await Promise.all([
          import('@codemirror/language'),
          import('@lezer/highlight'),
          import('./mode')
        ]);
        const language = cm.StreamLanguage.define(flowMode);
        // JupyterLab's highlight style leaves type names uncoloured; give Flow's
        // primitive types the theme's type colour (CodeMirror 5's `variable-3`).
        const types = cm.HighlightStyle.define(
          [
            {
              tag: tags.standard(tags.typeName),
              color: 'var(--jp-mirror-editor-variable-3-color)'
            }
          ],
          { scope: language }
        );
        return new cm.LanguageSupport(language, [cm.syntaxHighlighting(types)]);
      }
    });
  }
};

export default [plugin, liveViewPlugin];
