// The copy button of the token page: copies the text of the element its data-copy names.
// A local file (the CSP allows no inline script); the page works without it.
for (const button of document.querySelectorAll('button[data-copy]')) {
  button.hidden = false
  button.addEventListener('click', async () => {
    const source = document.getElementById(button.dataset.copy)
    const status = document.getElementById(button.dataset.copy + '-status')
    try {
      await navigator.clipboard.writeText(source.value ?? source.textContent)
      if (status) status.textContent = 'Copié.'
    } catch {
      source.select?.()
      if (status) status.textContent = 'Copie impossible : sélectionnez le texte et copiez-le.'
    }
  })
}
