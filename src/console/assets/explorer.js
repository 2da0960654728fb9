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
