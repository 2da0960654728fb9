// GraphiQL 5 puts role="tab" on a draggable item that contains the tab's button (and its close
// button): nested interactive controls, which screen readers announce poorly. The button is the
// control a keyboard reaches, so it becomes the tab and its container a plain wrapper.
(() => {
  const fix = () => {
    for (const item of document.querySelectorAll('.graphiql-tab[role="tab"]')) {
      const button = item.querySelector('.graphiql-tab-button');
      if (!button) continue;
      button.setAttribute('role', 'tab');
      button.setAttribute('aria-selected', item.getAttribute('aria-selected') ?? 'false');
      item.setAttribute('role', 'presentation');
      item.removeAttribute('aria-selected');
      item.removeAttribute('tabindex');
    }
  };
  new MutationObserver(fix).observe(document.documentElement, { subtree: true, childList: true, attributes: true, attributeFilter: ['role', 'aria-selected'] });
  fix();
})();

// GraphiQL fetches the schema as the page starts, before its headers editor exists, so that first
// introspection goes out without the page's Authorization header and is refused: no docs, no
// completion. A same-origin introspection request that carries no Authorization gets the page's token.
(() => {
  // ruru's configuration, a global of the page's first inline script.
  const config = typeof RURU_CONFIG === 'undefined' ? {} : RURU_CONFIG; // eslint-disable-line no-undef
  const authorization = JSON.parse(config.initialHeaders || '{}').Authorization;
  if (!authorization) return;
  const fetchAsIs = window.fetch.bind(window);
  window.fetch = (input, init = {}) => {
    const url = new URL(input instanceof Request ? input.url : String(input), location.href);
    const introspection = typeof init.body === 'string' && init.body.includes('"operationName":"IntrospectionQuery"');
    if (url.origin === location.origin && url.pathname === '/graphql' && introspection) {
      const headers = new Headers(init.headers);
      if (!headers.has('authorization')) headers.set('authorization', authorization);
      init = { ...init, headers };
    }
    return fetchAsIs(input, init);
  };
})();
