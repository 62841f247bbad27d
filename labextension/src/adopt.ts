/**
 * A run's outputs in a page that did not start it (the page reloaded mid-run).
 *
 * A notebook page shows what a kernel sends for the cells *it* executed: JupyterLab hands
 * an IOPub message to the request's future, and only the page that sent the request has
 * it. A page reloaded while a Flow run goes on (the kernel alive, the run waiting for an
 * approval, say) gets the live view back from the saved notebook and the widget manager,
 * and a click in it lands in the kernel; but the run's summary (an `update_display_data`
 * on the live view's display id), its result and anything it prints go to the request
 * that started it, which this page never sent, and were dropped.
 *
 * The live view's display says which request it belongs to and its display id
 * (`application/vnd.flow.run-view+json`: `parent`, `display`; flow_kernel/views/run_view.py
 * `unlinked_bundle`). This module takes, for a notebook page, the kernel's output messages
 * of such a request that no future of the page handles, and applies them to the cell that
 * shows the live view, as the cell's own output area does for its request: the summary
 * replaces the view, the result and streams are added. Nothing is sent to the kernel, and
 * the data is shown by the same renderers, with the same trust, as any output of the cell.
 */
/** The live view's marker type: its display's data under it names the run, the request
 * and the display id. */
export const LIVE_MIME = 'application/vnd.flow.run-view+json';

type Json = Record<string, unknown>;

/** The IOPub message fields read here. */
export interface IOutputMessage {
  header: { msg_type: string };
  parent_header: { msg_id?: string };
  content: Json;
}

/** An output as nbformat writes it (what an output area model takes). */
export type Output = Json & { output_type: string };

/** The part of a cell's output area model used here. */
export interface IOutputList {
  readonly length: number;
  get(index: number): { readonly data: Json };
  set(index: number, output: Output): void;
  add(output: Output): number;
}

/** The part of a notebook cell (widget and model) used here. */
export interface ICellLike {
  readonly model: { readonly type?: string; readonly outputs?: IOutputList; executionCount?: number | null };
  readonly outputArea?: { readonly future?: { readonly msg?: { readonly header?: { readonly msg_id?: string } } } | null };
}

/** The part of a notebook panel used here. */
export interface IPanelLike {
  readonly content: { readonly widgets: ReadonlyArray<ICellLike> };
  readonly sessionContext: {
    readonly iopubMessage: { connect(slot: (sender: unknown, msg: IOutputMessage) => void): boolean };
  };
}

const OUTPUTS = new Set(['stream', 'display_data', 'update_display_data', 'execute_result', 'error']);

/** The live view's marker in an output, if it has one. */
function marker(data: Json): Json | null {
  const mark = data[LIVE_MIME];
  return mark !== null && typeof mark === 'object' && !Array.isArray(mark) ? (mark as Json) : null;
}

/** The cell showing a live view of request `parent` that this page did not send, or null:
 * no such view; the page's own request, whose future shows its outputs (whichever cell holds
 * it); or more than one cell naming the request — a marker copied or forged in a notebook
 * file, which the page cannot tell from the view's own, so neither is given the outputs. */
export function orphanCell(cells: ReadonlyArray<ICellLike>, parent: string): ICellLike | null {
  let found: ICellLike | null = null;
  for (const cell of cells) {
    const outputs = cell.model.outputs;
    if (cell.model.type !== 'code' || !outputs) {
      continue;
    }
    if (cell.outputArea?.future?.msg?.header?.msg_id === parent) {
      return null;
    }
    for (let i = 0; i < outputs.length; i++) {
      if (marker(outputs.get(i).data)?.parent === parent) {
        if (found !== null && found !== cell) {
          return null;
        }
        found = cell;
      }
    }
  }
  return found;
}

/** Apply one output message to `cell`, as an output area applies its own request's. */
export function applyOutput(cell: ICellLike, msg: IOutputMessage): void {
  const outputs = cell.model.outputs;
  if (!outputs) {
    return;
  }
  const c = msg.content;
  switch (msg.header.msg_type) {
    case 'update_display_data': {
      const id = (c.transient as Json | undefined)?.display_id;
      for (let i = 0; i < outputs.length; i++) {
        if (typeof id === 'string' && marker(outputs.get(i).data)?.display === id) {
          outputs.set(i, { output_type: 'display_data', data: c.data, metadata: c.metadata ?? {} });
        }
      }
      return;
    }
    case 'stream':
      outputs.add({ output_type: 'stream', name: c.name, text: c.text });
      return;
    case 'display_data':
      outputs.add({ output_type: 'display_data', data: c.data, metadata: c.metadata ?? {} });
      return;
    case 'execute_result':
      outputs.add({ output_type: 'execute_result', data: c.data, metadata: c.metadata ?? {},
                    execution_count: c.execution_count ?? null });
      if (typeof c.execution_count === 'number') {
        cell.model.executionCount = c.execution_count;
      }
      return;
    case 'error':
      outputs.add({ output_type: 'error', ename: c.ename, evalue: c.evalue, traceback: c.traceback ?? [] });
      return;
  }
}

/** Show in `panel` the outputs of the runs whose live view it shows but did not start. */
export function adoptRunOutputs(panel: IPanelLike): void {
  const adopted = new Map<string, ICellLike>(); // request id -> the cell showing its live view
  panel.sessionContext.iopubMessage.connect((_sender, msg) => {
    const parent = msg.parent_header?.msg_id;
    const type = msg.header.msg_type;
    if (!parent) {
      return;
    }
    if (type === 'status') {
      if (msg.content.execution_state === 'idle') {
        adopted.delete(parent); // a background run's later outputs find the cell again
      }
      return;
    }
    if (!OUTPUTS.has(type)) {
      return;
    }
    let cell = adopted.get(parent) ?? null;
    if (cell === null) {
      cell = orphanCell(panel.content.widgets, parent);
      if (cell === null) {
        return;
      }
      adopted.set(parent, cell);
    }
    applyOutput(cell, msg);
  });
}
