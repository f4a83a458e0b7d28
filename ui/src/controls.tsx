import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { ViewState } from '../../src/ui/view-state.js';
import type { SetState } from './app.js';
import type { ApiError } from './data.js';
import { formatBytes, parseSize } from './format.js';
import type { Loaded } from './use-api.js';

export interface Presets {
  readonly presets: readonly { name: string; description: string }[];
  readonly files: readonly string[];
  readonly models: readonly string[];
  readonly ops: readonly string[];
}

export function Field({ label, children }: { label: string; children: ComponentChildren }) {
  return (
    // biome-ignore lint/a11y/noLabelWithoutControl: the control is the label's child, which labels it in HTML.
    <label class="field">
      <span>{label}</span>
      {children}
    </label>
  );
}

/** The topology picker every simulated view starts with; the view loads the presets once and shares them. */
export function TopologyPicker({ state, set, presets }: { state: ViewState; set: SetState; presets: Loaded<Presets> }) {
  const names =
    presets.state === 'ready' ? [...presets.data.presets.map((p) => p.name), ...presets.data.files] : [state.topo];
  const description =
    presets.state === 'ready' ? presets.data.presets.find((p) => p.name === state.topo)?.description : undefined;
  return (
    <>
      <Field label="topology">
        <select value={state.topo} onChange={(e) => set({ topo: e.currentTarget.value, channel: 0 })}>
          {(names.includes(state.topo) ? names : [state.topo, ...names]).map((name) => (
            <option key={name} value={name}>
              {name}
            </option>
          ))}
        </select>
      </Field>
      <NumberField label="servers (0: preset's)" value={state.nodes} onCommit={(nodes) => set({ nodes })} />
      {description !== undefined && <p class="note">{description}</p>}
    </>
  );
}

/** A number input that changes the state when the user leaves it or presses Enter, not on every keystroke. */
export function NumberField({
  label,
  value,
  onCommit,
  min = 0,
}: {
  label: string;
  value: number;
  onCommit: (value: number) => void;
  min?: number;
}) {
  return (
    <Field label={label}>
      <input
        type="number"
        min={min}
        step={1}
        value={value}
        onChange={(e) => {
          const n = Number(e.currentTarget.value);
          if (Number.isInteger(n) && n >= min) onCommit(n);
        }}
      />
    </Field>
  );
}

/** A size in bytes typed as "64M" or "4096". */
export function SizeField({ label, value, onCommit }: { label: string; value: number; onCommit: (v: number) => void }) {
  const [text, setText] = useState(formatBytes(value).replace(' ', ''));
  useEffect(() => setText(formatBytes(value).replace(' ', '').replace('iB', '')), [value]);
  return (
    <Field label={label}>
      <input
        type="text"
        value={text}
        aria-describedby="size-help"
        onInput={(e) => setText(e.currentTarget.value)}
        onChange={(e) => {
          const bytes = parseSize(e.currentTarget.value);
          if (bytes !== undefined && bytes > 0) onCommit(bytes);
        }}
      />
    </Field>
  );
}

export function Failure({ error }: { error: ApiError }) {
  return (
    <div class="failure" role="alert">
      <strong>{error.code}</strong>
      {error.argument !== null && <> (parameter {error.argument})</>}: {error.message}
    </div>
  );
}

export const Loading = () => (
  <p class="loading" aria-live="polite">
    simulating…
  </p>
);

/** A choice among names (a collective, a model), the current one kept while the list loads. */
export function ChoiceField({
  label,
  value,
  choices,
  onChange,
}: {
  label: string;
  value: string;
  choices: readonly string[] | undefined;
  onChange: (value: string) => void;
}) {
  return (
    <Field label={label}>
      <select value={value} onChange={(e) => onChange(e.currentTarget.value)}>
        {(choices ?? [value]).map((choice) => (
          <option key={choice} value={choice}>
            {choice}
          </option>
        ))}
      </select>
    </Field>
  );
}

/** Which model of the simulator answers: the flow engine, the analytical model, or auto by size. */
export function ModeField({ state, set }: { state: ViewState; set: SetState }) {
  return (
    <Field label="simulator">
      <select value={state.mode} onChange={(e) => set({ mode: e.currentTarget.value as ViewState['mode'] })}>
        <option value="auto">auto (flow up to 64 ranks)</option>
        <option value="flow">flow engine</option>
        <option value="analytical">analytical</option>
      </select>
    </Field>
  );
}

/**
 * JSON files the user picks on the page (bench files, training traces): each read, checked by
 * `accept` (which throws with what is wrong), and kept with its name; a refusal names the file.
 */
export function usePickedFiles<T>(accept: (doc: unknown) => T): {
  picked: { name: string; doc: T }[];
  refused: string | undefined;
  pick: (files: FileList | null) => Promise<void>;
} {
  const [picked, setPicked] = useState<{ name: string; doc: T }[]>([]);
  const [refused, setRefused] = useState<string>();
  const pick = async (files: FileList | null) => {
    for (const file of files ?? []) {
      try {
        const doc = accept(JSON.parse(await file.text()));
        setPicked((old) => [...old, { name: file.name, doc }]);
        setRefused(undefined);
      } catch (err) {
        setRefused(`${file.name}: ${(err as Error).message}`);
      }
    }
  };
  return { picked, refused, pick };
}

/** The file input of usePickedFiles, with its refusal. */
export function FilePicker({
  label,
  pick,
  refused,
}: {
  label: string;
  pick: (files: FileList | null) => Promise<void>;
  refused: string | undefined;
}) {
  return (
    <>
      <Field label={label}>
        <input
          type="file"
          accept=".json,application/json"
          multiple
          onChange={(e) => void pick(e.currentTarget.files)}
        />
      </Field>
      {refused !== undefined && (
        <div class="failure" role="alert">
          {refused}
        </div>
      )}
    </>
  );
}
