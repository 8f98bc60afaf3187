// attention-lens, the attention view (assets/shell/lens.js): moving through a trajectory with no request to the
// server: Step / Back / Run / Reset, the slider, Play, leaving a reference, and telling the page where the view is.
// `ctl` is the view's lens.ctl, on its element (attention_lens/translate/tab.py's buttons call it).
// A part of the view's script (attention_lens/shell/components.py `script`, LENS_PARTS): the body of a function of
// `view`, in a scope of its own; what it takes from the view and the parts before it is named just below, what it
// gives is returned at the end (lens.js puts it in `view`).
const {st, q, MAIN, setText, tl, trigger, find, draw, frame, cv, pushTopk} = view;

function announce() {                     // tell the page: the translation box, the position other tabs read
  if (!MAIN) return;
  const fire = find("lens_bus", "bus") || trigger;  // #lens_bus's trigger: events fired on this
  // view would copy its payload
  fire("input");                          // a js-only Gradio event (translate_tab.py): no request
  const layers = document.getElementById("tab_layers");
  if (layers && layers.offsetParent !== null) fire("select");  // Across layers follows the step while shown
}
function go(t, doc) {
  const d = doc || st.traj;
  if (!d) { setText(q("status"), tl("no_sentence")); return false; }
  t = Math.max(0, Math.min(d.n - 1, t));
  const changed = st.doc !== d || st.t !== t || st.traj !== d;
  st.traj = d; st.doc = d; st.t = t;
  draw();
  if (changed) announce();
  return changed;
}
function pause() {
  if (st.timer) { clearTimeout(st.timer); st.timer = null; }
  const b = q("play"); b.textContent = tl("play"); b.classList.remove("playing");
}
function play() {
  if (!st.traj) return;
  if (st.timer) { pause(); return; }
  if (st.doc !== st.traj || st.t >= st.traj.n - 1) go(0);
  const b = q("play"); b.textContent = tl("pause"); b.classList.add("playing");
  const tick = () => {
    if (!st.traj || st.t >= st.traj.n - 1) { pause(); return; }
    go(st.t + 1);
    st.timer = st.t >= st.traj.n - 1 ? (pause(), null) : setTimeout(tick, st.speed);
  };
  st.timer = setTimeout(tick, st.speed);
}
const range = (d) => tl("steps_range", {last: d.n - 1});
function edge(moved, last) {              // a step that could not move says where the sentence's steps end
  const d = st.traj;
  if (!moved && d && st.doc === d) setText(q("status"), last
    ? tl("step_last", {t: st.t, range: range(d)}) : tl("step_first", {range: range(d)}));
  return moved;
}
const ctl = {
  step: () => { pause(); return edge(go(st.doc === st.traj ? st.t + 1 : st.t), true); },
  back: () => { pause(); return edge(go(st.doc === st.traj ? st.t - 1 : st.t), false); },
  run: () => { pause(); return go(Infinity); },
  reset: () => { pause(); return go(0, st.traj && st.greedy && st.traj.forced.some(Boolean) ? st.greedy : st.traj); },
  goto: (i) => {
    pause();
    const d = st.traj;
    if (!d) return go(0);
    if (typeof i !== "number" || !Number.isInteger(i) || i < 0 || i >= d.n) {
      setText(q("status"), tl("no_step", {i, last: d.n - 1})); return false;
    }
    return go(i);
  },
  play, pause,
  leave: () => {                          // from a reference back to the decoding it was opened from
    pause();
    const b = st.back;
    if (!b) return false;
    st.back = null; cv.big = null;
    return go(b.t, b.traj);
  },
  setK: (k) => { if (Number.isInteger(k) && k >= 1 && k <= 20) { st.k = k; if (st.doc) pushTopk(frame()); } },
  setWords: (w) => { st.words = !!w; if (st.doc) { cv.big = null; draw(); } },
};

return {ctl, go, pause, play};
