// Typeset the \( \) and \[ \] spans that pymdownx.arithmatex leaves in the page (KaTeX is served from the site itself).
document.addEventListener("DOMContentLoaded", function () {
  for (const el of document.querySelectorAll(".arithmatex")) {
    const tex = el.textContent.trim();
    const display = tex.startsWith("\\[");
    katex.render(tex.slice(2, -2), el, { displayMode: display, throwOnError: false });
  }
});
