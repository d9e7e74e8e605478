// Files the API answers (a PDF, a CSV) need the key in a header, so a plain link cannot fetch them:
// the console fetches, then hands the browser a blob: URL to open or save.

/** Saves a Response as a file named `name`. */
export async function saveResponse(res, name) {
  const url = URL.createObjectURL(await res.blob())
  const a = document.createElement('a')
  a.href = url
  a.download = name
  document.body.append(a)
  a.click()
  a.remove()
  setTimeout(() => URL.revokeObjectURL(url), 60_000)
}

/** Opens a Response (a PDF) in a new tab. The tab must be opened before the fetch: browsers block later pop-ups. */
export async function openInTab(tab, res) {
  const url = URL.createObjectURL(await res.blob())
  tab.location.href = url
  setTimeout(() => URL.revokeObjectURL(url), 600_000)
}
