"""Site: what the static site's pages call, and a local server for it.

    bridge    the JSON functions the pages call through the worker; no logic of their own
    server    `cellar serve`: the right MIME types, revalidation, cross-origin isolation
"""
