// attention-lens: each tab's view as link parameters. One registry, tabs[tab] =
// {ready(): bool, get(): {name: value} | null, set(params, notes): Promise}: Copy link (assets/shell/link.js) puts the
// shown tab's get() in the query as <tab>_<name>; a link opened calls set() with those values (strings from the URL:
// checked here; one out of range is ignored and said in `notes`, naming the allowed range). The Compare tab and the
// Head atlas register themselves (assets/compare/compare.js, assets/atlas/atlas.js); the tabs built of Gradio components
// (Head ablation, Beam search, Across layers, Attention being learned, Model) are registered below, where their
// controls are set as a user sets them and their own button is pressed, so that a restored view is started.
// A part of the js_on_load of the gr.HTML #lesson (attention_lens/shell/lesson.py `script`), in a scope of its own: assets/shell/lesson.js
// calls it first with `view` = {element: that box}; it gives the registry `tabs` and its helpers `kit` (lesson.js keeps
// both on its instance, #lesson's .lesson: assets/shell/link.js, compare.js and atlas.js find them there).
const {element, find} = view;
{
  const views = {};
  for (const tab of ["compare", "atlas"]) {  // the views of Compare and the Head atlas, kept by their own scripts
    Object.defineProperty(views, tab, {enumerable: true,  // on their elements (assets/compare/compare.js, atlas.js)
      get: () => find(tab, tab)?.linkView});
  }
  const sleep = (ms) => new Promise(r => setTimeout(r, ms));
  const until = async (test, ms) => {
    for (const t0 = performance.now(); performance.now() - t0 < ms; await sleep(50)) if (test()) return true;
    return false;
  };
  const $ = (sel) => document.querySelector(sel);
  const short = (v) => JSON.stringify(String(v).length > 24 ? `${String(v).slice(0, 24)}…` : String(v));
  const kit = {
    sleep, until,
    whole(notes, name, v, min, max) {     // a whole number in [min, max], else undefined and a note naming the range
      if (v === undefined) return undefined;
      if (/^\d{1,4}$/.test(v) && +v >= min && +v <= max) return +v;
      notes.push(`${name} ${short(v)} (a whole number from ${min} to ${max})`);
      return undefined;
    },
    oneOf(notes, name, v, allowed) {
      if (v === undefined) return undefined;
      if (allowed.includes(v)) return v;
      notes.push(`${name} ${short(v)} (one of ${allowed.join(", ")})`);
      return undefined;
    },
    unknown(notes, tab, params, known) {  // names this tab does not have
      for (const k of Object.keys(params)) if (!known.includes(k)) notes.push(`${tab}_${short(k).slice(1, -1)} (not a parameter of this tab)`);
    },
    async pick(id, which) {               // a gr.Dropdown set as a user sets it, its list opened once: `which` is a
      const input = $(`#${id} input[role=combobox]`);  // label or labels => label (or nothing: none picked). Gradio
      if (!input) return false;           // sends the value on every blur, so one opening sends only the value chosen
      if (input.value === which) return true;
      input.focus(); input.dispatchEvent(new MouseEvent("mousedown", {bubbles: true})); input.click();
      if (!await until(() => $(`#${id} li[role=option]`), 5000)) return false;
      const items = [...document.querySelectorAll(`#${id} li[role=option]`)];
      const label = typeof which === "function" ? which(items.map(o => o.getAttribute("aria-label"))) : which;
      const li = items.find(o => o.getAttribute("aria-label") === label);
      if (!li || input.value === label) { input.blur(); return !!li; }
      li.dispatchEvent(new MouseEvent("mousedown", {bubbles: true}));
      const ok = await until(() => input.value === label, 3000);
      input.blur();
      return ok;
    },
    slide(id, v) {                        // a gr.Slider set as a drag sets it
      const r = $(`#${id} input[type=range]`);
      if (!r) return;
      r.value = String(v);
      r.dispatchEvent(new Event("input", {bubbles: true})); r.dispatchEvent(new Event("change", {bubbles: true}));
      r.dispatchEvent(new PointerEvent("pointerup", {bubbles: true}));
    },
  };
  const cfg = JSON.parse(element.querySelector(".lesson").dataset.views || "{}");
  const text = (sel) => { const e = $(sel); return e ? (e.value ?? e.textContent) : ""; };
  const lensOf = (id) => find(id, "lens");  // a view of assets/shell/lens.js, on its element
  const sentenceOn = () => lensOf("attention")?.state?.traj;
  const drawn = (id) => { const v = lensOf(id); return v ? v.renders : 0; };
  async function press(button, id, done) { // the tab's own button; its answer is the next drawing of its view
    const r = drawn(id);
    await until(() => !!$(button), 10000);  // (a model's answer may draw it again)
    await sleep(100);
    if ($(button)) $(button).click();
    return until(() => drawn(id) > r && done(), 60000);
  }

  // -- Head ablation: the heads switched off (e1.2 = encoder self layer 1 head 2; d decoder self; c cross) -------
  const GROUPS = {e: "ablate_enc", d: "ablate_dec", c: "ablate_cross"};
  const boxes = (g) => [...document.querySelectorAll(`#${GROUPS[g]} label`)]
    .map(l => ({l, input: l.querySelector("input[type=checkbox]"), m: /^L(\d+) H(\d+)$/.exec(l.textContent.trim())}))
    .filter(b => b.input && b.m);
  const top = (i) => Math.max(0, ...Object.keys(GROUPS).flatMap(g => boxes(g).map(b => +b.m[i])));
  views.ablation = {
    ready: () => !!$("#ablate_run") && boxes("e").length > 0,
    get() {
      const off = [];
      for (const g of Object.keys(GROUPS)) for (const b of boxes(g)) if (b.input.checked) off.push(`${g}${b.m[1]}.${b.m[2]}`);
      return off.length ? {off: off.join(",")} : {};
    },
    async set(p, notes) {
      kit.unknown(notes, "ablation", p, ["off"]);
      if (p.off === undefined) return;
      const want = new Set();
      for (const one of p.off.split(",").slice(0, 200)) {
        const m = /^([edc])(\d{1,2})\.(\d{1,2})$/.exec(one);
        const found = m && boxes(m[1]).some(b => b.m[1] === m[2] && b.m[2] === m[3]);
        if (found) want.add(one);
        else notes.push(`ablation_off ${short(one)} (heads such as e1.2: e, d or c, layer 1 to ${top(1)}, head 1 to ${top(2)})`);
      }
      for (const g of Object.keys(GROUPS)) for (const b of boxes(g)) {
        if (b.input.checked !== want.has(`${g}${b.m[1]}.${b.m[2]}`)) b.input.click();
      }
      if (want.size && sentenceOn()) await press("#ablate_run", "attention_ablated", () => text("#ablated_translation textarea"));
    },
  };

  // -- Beam search: the beam size and the hypothesis picked (1 = the best) -------------------------------------
  const shows = (h) => { const v = lensOf("attention_beam"), d = v && v.state.doc;
                         return !!d && d.p.doc === `beam ${h}`; };  // the map drawn is hypothesis h's
  const hypothesis = () => { const m = /^(\d+)\./.exec(text("#beam_choice input[role=combobox]")); return m ? +m[1] : null; };
  views.beam = {
    ready: () => !!$("#beam_run") && !!$("#beam_size input[type=range]"),
    get() {
      const out = {size: +$("#beam_size input[type=range]").value}, h = hypothesis();
      if (h !== null) out.hypothesis = h;
      return out;
    },
    async set(p, notes) {
      kit.unknown(notes, "beam", p, ["size", "hypothesis"]);
      const size = kit.whole(notes, "beam_size", p.size, 1, 8);
      if (size !== undefined) kit.slide("beam_size", size);
      if (!sentenceOn() || !await press("#beam_run", "attention_beam", () => hypothesis() !== null && shows(1))) return;
      if (p.hypothesis === undefined) return;
      let h;                              // checked against the list's length, picked in the same opening of it
      await kit.pick("beam_choice", (labels) => {
        h = kit.whole(notes, "beam_hypothesis", p.hypothesis, 1, Math.max(1, labels.length));
        return h === undefined ? null : labels[h - 1];
      });
      if (h !== undefined) await until(() => shows(h), 30000);  // its own map (the payload names it: beam_payload)
    },
  };

  // -- Across layers: the word alignment's method (the step is the Translate view's, in the link already) -------
  const METHODS = cfg.methods || [];      // [[label, value], ...] (attention_lens/translate/attribution.py ALIGN_METHODS)
  views.layers = {
    ready: () => !!$("#word_align_method input[role=combobox]"),
    get() {
      const shown = text("#word_align_method input[role=combobox]"), m = METHODS.find(x => x[0] === shown);
      return m ? {method: m[1]} : {};
    },
    async set(p, notes) {
      kit.unknown(notes, "layers", p, ["method"]);
      const v = kit.oneOf(notes, "layers_method", p.method, METHODS.map(x => x[1]));
      if (v !== undefined) await kit.pick("word_align_method", METHODS.find(x => x[1] === v)[0]);
    },
  };

  // -- Attention being learned: the snapshot ----------------------------------------------------------------
  views.learned = {
    ready: () => (!!$("#learned_epoch input[type=range]") && /Snapshot \d/.test(text("#learned_point")))
      || /no attention history/.test(text("#learned_intro")),
    get: () => { const r = $("#learned_epoch input[type=range]"); return r ? {snapshot: +r.value} : {}; },  // none: no history
    async set(p, notes) {                 // (ready once the model's history has come: its slider's range)
      kit.unknown(notes, "learned", p, ["snapshot"]);
      const r = $("#learned_epoch input[type=range]");
      if (!r) { if (p.snapshot !== undefined) notes.push("learned_snapshot (this model has no attention history)"); return; }
      const v = kit.whole(notes, "learned_snapshot", p.snapshot, +r.min || 1, +r.max || 1);
      if (v === undefined) return;
      for (let i = 0; i < 4; i++) {       // the tab's content may come once more when first opened: set until it stays
        kit.slide("learned_epoch", v);
        await until(() => text("#learned_point").includes(`Snapshot ${v} `), 15000);
        await sleep(1000);
        if (+$("#learned_epoch input[type=range]").value === v && text("#learned_point").includes(`Snapshot ${v} `)) break;
      }
    },
  };

  // -- Model: the model's card (the model is in every link) ---------------------------------------------------
  views.model = {ready: () => true, get: () => ({}), async set(p, notes) { kit.unknown(notes, "model", p, []); }};
  return {tabs: views, kit};
}
