// The console's only script: "select all" in a review queue. Every page works without it.
document.addEventListener("change", (event) => {
  const box = event.target;
  if (!(box instanceof HTMLInputElement) || !box.classList.contains("select-all")) return;
  for (const pick of box.form.querySelectorAll("input.pick")) pick.checked = box.checked;
});
