// The review page works without this file: it only adds a copy button beside each full
// digest. Served from the page's own origin (CSP script-src 'self'); no inline script.
'use strict';

document.addEventListener('DOMContentLoaded', () => {
  for (const el of document.querySelectorAll('code[data-copy]')) {
    const button = document.createElement('button');
    button.type = 'button';
    button.className = 'copy';
    button.textContent = 'Copy';
    button.title = 'Copy the full digest';
    button.addEventListener('click', async () => {
      try {
        await navigator.clipboard.writeText(el.dataset.copy);
        button.textContent = 'Copied';
      } catch {
        // No clipboard permission: select the digest for Ctrl+C.
        const range = document.createRange();
        range.selectNodeContents(el);
        const sel = window.getSelection();
        sel.removeAllRanges();
        sel.addRange(range);
        button.textContent = 'Selected: press Ctrl+C';
      }
    });
    el.after(button);
  }
});
