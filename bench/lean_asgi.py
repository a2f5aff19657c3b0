"""config.asgi's application with the lean trace-ingest mount (`traces.ingest.mount`) in front.

`bench/ingest.py --lean` serves this, to measure the mount before config/asgi.py applies it.
Once config/asgi.py wraps its application with `mount`, this is the same as config.asgi.
"""

from config.asgi import application as _application
from traces.ingest import mount

application = mount(_application)
