// The console works without this script; with it, dialogs open in place, keys are created without a
// page load, Copy copies, and the playground shows images live as they finish.
'use strict';

const csrf = () => document.querySelector('main')?.dataset.csrf ?? '';

async function post(url, fields) {
  return send(url, new URLSearchParams({ ...fields, _csrf: csrf() }));
}

/** Posts a whole form (repeated fields such as permission checkboxes included). */
function postForm(form) {
  const body = new URLSearchParams(new FormData(form));
  if (!body.has('_csrf')) body.set('_csrf', csrf());
  return send(form.action, body);
}

async function send(url, body) {
  const res = await fetch(url, { method: 'POST', body, headers: { accept: 'application/json' }, credentials: 'same-origin' });
  const data = await res.json().catch(() => ({ error: `Request failed (${res.status})` }));
  if (!res.ok) throw new Error(data.error ?? `Request failed (${res.status})`);
  return data;
}

function el(tag, attrs = {}, text) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

document.addEventListener('click', (event) => {
  const target = event.target instanceof Element ? event.target : null;
  if (!target) return;
  const opener = target.closest('[data-open]');
  if (opener) {
    const dialog = document.getElementById(opener.dataset.open);
    if (dialog) {
      // Without this script the button's form opens the same dialog as a page.
      event.preventDefault();
      dialog.showModal();
    }
    return;
  }
  const deleter = target.closest('[data-delete-key]');
  if (deleter) {
    event.preventDefault();
    const dialog = document.getElementById('delete-key-dialog');
    dialog.querySelector('[data-key-name]').textContent = deleter.dataset.keyName;
    dialog.querySelector('[data-delete-form]').action = `/console/keys/${deleter.dataset.deleteKey}/delete`;
    dialog.showModal();
    return;
  }
  const remover = target.closest('[data-remove-member]');
  if (remover) {
    event.preventDefault();
    const dialog = document.getElementById('remove-member-dialog');
    dialog.querySelector('[data-member-email]').textContent = remover.dataset.memberEmail;
    dialog.querySelector('[data-remove-form]').action = `/console/team/members/${remover.dataset.removeMember}/remove`;
    dialog.showModal();
    return;
  }
  const menuToggle = target.closest('[data-menu-toggle]');
  if (menuToggle) {
    const menu = document.getElementById(menuToggle.getAttribute('aria-controls'));
    const open = menuToggle.getAttribute('aria-expanded') !== 'true';
    menuToggle.setAttribute('aria-expanded', String(open));
    menu.hidden = !open;
    return;
  }
  // Switching accounts changes the session: a POST with the form token, not a GET of the link.
  const switcher = target.closest('[data-switch-account]');
  if (switcher) {
    event.preventDefault();
    const form = el('form', { method: 'post', action: switcher.getAttribute('href') });
    form.append(el('input', { type: 'hidden', name: '_csrf', value: csrf() }));
    document.body.append(form);
    form.submit();
    return;
  }
  if (target.closest('[data-close]')) {
    const dialog = target.closest('dialog');
    if (dialog?.dataset.reload) location.reload();
    else dialog?.close();
    return;
  }
  const copy = target.closest('[data-copy]');
  if (copy) {
    const text = document.querySelector(copy.dataset.copy)?.textContent ?? '';
    navigator.clipboard?.writeText(text).then(
      () => (copy.textContent = 'Copied'),
      () => (copy.textContent = 'Select and copy'),
    );
  }
});

// The account menu: a button that opens the list of accounts (without this script the list shows as links).
for (const toggle of document.querySelectorAll('[data-menu-toggle]')) {
  document.getElementById(toggle.getAttribute('aria-controls')).hidden = true;
  toggle.hidden = false;
}

// Add Key and Roll key: through fetch, then the new key shown once in the same dialog.
for (const form of document.querySelectorAll('[data-create-key], [data-roll-key]')) form.addEventListener('submit', showNewKey);
// Edit: saved through fetch; the page then shows the new settings.
for (const form of document.querySelectorAll('[data-edit-key]')) {
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const error = form.querySelector('[data-error]');
    try {
      await postForm(form);
      location.reload();
    } catch (err) {
      error.textContent = err.message;
      error.hidden = false;
    }
  });
}

async function showNewKey(event) {
  event.preventDefault();
  const form = event.currentTarget;
  const dialog = form.closest('dialog');
  const error = form.querySelector('[data-error]');
  try {
    const created = await postForm(form);
    const panel = dialog.querySelector('[data-created]');
    panel.replaceChildren(
      el('p', {}, `Copy the key for “${created.name}” now. It will not be shown again: only its hash is stored.`),
      Object.assign(el('div', { class: 'copy-row' }), {}),
    );
    const row = panel.querySelector('.copy-row');
    row.append(el('code', { id: 'new-key' }, created.key), el('button', { type: 'button', 'data-copy': '#new-key' }, 'Copy'));
    panel.append(el('div', { class: 'actions' }));
    panel.querySelector('.actions').append(el('button', { type: 'button', class: 'secondary', 'data-close': '' }, 'Done'));
    panel.classList.add('created-key');
    panel.hidden = false;
    form.hidden = true;
    dialog.dataset.reload = 'true';
    dialog.addEventListener('close', () => location.reload(), { once: true });
  } catch (err) {
    error.textContent = err.message;
    error.hidden = false;
  }
}

// Playground: lookups and generation in place; images appear as each one finishes.
const balance = (credits) => document.querySelectorAll('[data-balance]').forEach((n) => (n.textContent = String(credits)));

document.querySelector('[data-lookup]')?.addEventListener('submit', async (event) => {
  event.preventDefault();
  const out = document.querySelector('[data-lookup-result]');
  out.replaceChildren(el('p', {}, 'Looking up…'));
  try {
    const result = await post('/console/playground/lookup', { keyword: event.currentTarget.elements.keyword.value });
    out.replaceChildren(el('h3', {}, result.keyword), el('pre', { class: 'definition' }, result.definition));
    balance(result.credits);
  } catch (err) {
    out.replaceChildren(el('p', { class: 'error', role: 'alert' }, err.message));
  }
});

function renderJob(out, job) {
  const summary = el('p', { class: 'job-status' });
  summary.append(el('span', { class: `badge ${job.status}` }, job.status), ` ${job.succeededImages} of ${job.totalImages} images done`);
  const canceled = job.images.filter((i) => i.status === 'canceled').length;
  const notDone = [job.failedImages ? `${job.failedImages} failed` : '', canceled ? `${canceled} canceled` : ''].filter(Boolean).join(', ');
  if (notDone) summary.append(`, ${notDone} (${job.creditsRefunded} credits refunded)`);
  const list = el('ul', { class: 'images', 'aria-label': 'Images' });
  for (const image of job.images) {
    const item = el('li', { class: `image ${image.status}` });
    item.append(image.url ? el('img', { src: image.url, alt: image.prompt, width: '128', height: String(image.width > 0 ? Math.round((128 * image.height) / image.width) : 128) }) : el('div', { class: 'placeholder', 'aria-hidden': 'true' }));
    item.append(el('span', { class: 'prompt' }, image.prompt), el('span', { class: 'status' }, image.error ? `${image.status}: ${image.error}` : image.status));
    list.append(item);
  }
  out.replaceChildren(summary, list);
}

document.querySelector('[data-generate]')?.addEventListener('submit', async (event) => {
  event.preventDefault();
  const out = document.querySelector('[data-generate-result]');
  out.replaceChildren(el('p', {}, 'Starting…'));
  try {
    // The whole form: prompts, size, format and seed.
    const created = await postForm(event.currentTarget);
    balance(created.credits);
    const events = new EventSource(`/console/playground/jobs/${created.jobId}/events`);
    events.addEventListener('job', (e) => renderJob(out, JSON.parse(e.data)));
    events.addEventListener('balance', (e) => {
      balance(JSON.parse(e.data).credits);
      events.close();
    });
    events.onerror = () => events.close();
  } catch (err) {
    out.replaceChildren(el('p', { class: 'error', role: 'alert' }, err.message));
  }
});
