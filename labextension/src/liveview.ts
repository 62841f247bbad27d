/**
 * A Flow run's live view whose widget model is gone.
 *
 * The kernel shows a run's live view as a widget display that also carries
 * `application/vnd.flow.run-view+json` (the run's id) and a `text/plain` saying what
 * became of the view (flow_kernel/views/run_view.py `unlinked_bundle`); when the run ends,
 * the kernel replaces that display with the run's summary. A notebook saved before then
 * (an autosave mid-run, a save after Kernel ▸ Restart) keeps the live display, and opened
 * again it names a widget model that no kernel has. For a trusted output the Jupyter widget
 * manager's renderer is the one chosen, and it has no fallback: it shows "Loading
 * widget..." (no kernel) or "Error displaying widget: model not found".
 *
 * This plugin gives each notebook a renderer for the marker type, ranked before the widget
 * renderer. It is the notebook's own widget renderer, drawing the view as ever; where that
 * renderer ends with no view to show, the display's `text/plain` takes its place, as text
 * (never markup). It is not `safe`: an untrusted output shows the display's sanitised
 * `text/html`, as the widget renderer would leave it to.
 */
import type { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';

import { adoptRunOutputs, type IPanelLike, LIVE_MIME } from './adopt';

export { LIVE_MIME };
const WIDGET_MIME = 'application/vnd.jupyter.widget-view+json';
const RANK = -20; // before the widget manager's renderer (-10)

/** The part of a notebook's rendermime registry used here. */
interface IRegistry {
  addFactory(factory: IRenderMime.IRendererFactory, rank?: number): void;
  getFactory(mimeType: string): IRenderMime.IRendererFactory | undefined;
  createRenderer(mimeType: string): IRenderMime.IRenderer;
}

/** The widget manager's renderer: a panel whose children are the views it shows. */
interface IWidgetRenderer extends IRenderMime.IRenderer {
  readonly widgets?: ReadonlyArray<unknown>;
}

/** A display's `text/plain`, as one string (a saved notebook may hold it as lines). */
export function plainText(data: IRenderMime.IMimeModel['data']): string {
  const text = data['text/plain'];
  if (typeof text === 'string') {
    return text;
  }
  if (Array.isArray(text)) {
    return text.map(String).join('');
  }
  return 'Flow run: its live view is not connected to a kernel now.';
}

/** Put the display's text in `node`, in place of what the widget renderer left there. */
function showUnlinked(node: HTMLElement, data: IRenderMime.IMimeModel['data']): void {
  const note = document.createElement('div');
  note.className = 'flow-run-unlinked';
  note.style.whiteSpace = 'pre-wrap';
  note.textContent = plainText(data);
  node.textContent = '';
  node.appendChild(note);
}

/** The notebook's widget renderer, showing the display's text where it has no view to
 * show (called again by the widget manager when it is restored: the view may come then);
 * the `text/plain` renderer where the notebook has no widget manager. */
function liveViewRenderer(registry: IRegistry): IRenderMime.IRenderer {
  if (!registry.getFactory(WIDGET_MIME)) {
    return registry.createRenderer('text/plain');
  }
  const renderer = registry.createRenderer(WIDGET_MIME) as IWidgetRenderer;
  const renderView = renderer.renderModel.bind(renderer);
  renderer.renderModel = async (model: IRenderMime.IMimeModel): Promise<void> => {
    await renderView(model);
    const views = renderer.widgets ? renderer.widgets.length : 0;
    if (!renderer.isDisposed && !renderer.isHidden && views === 0) {
      showUnlinked(renderer.node, model.data);
    }
  };
  return renderer;
}

export const liveViewPlugin: JupyterFrontEndPlugin<void> = {
  id: 'flow-kernel-lab:live-view',
  description: "A Flow run's saved live view shows what became of it where its widget model is gone.",
  autoStart: true,
  activate: (app: JupyterFrontEnd): void => {
    app.docRegistry.addWidgetExtension('Notebook', {
      createNew: (panel: unknown): void => {
        const registry = (panel as { content?: { rendermime?: IRegistry } }).content?.rendermime;
        if (registry) {
          registry.addFactory(
            { safe: false, mimeTypes: [LIVE_MIME], defaultRank: RANK, createRenderer: () => liveViewRenderer(registry) },
            RANK
          );
        }
        adoptRunOutputs(panel as IPanelLike);
      }
    });
  }
};
