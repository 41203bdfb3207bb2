"""The web debugger: a live run or a record in a browser (``docs/visualization.md``).

:mod:`.store` indexes a run's ticks (any tick's frame, any node's history and timing),
:mod:`.skeleton` places the limbs' joints for the 3D view, :mod:`.terrain` rebuilds the
ground under them (seed 004's terrain, from the record's header), :mod:`.server` serves the
page (``static/``, vendored JavaScript) and its API with Starlette and uvicorn.
"""
