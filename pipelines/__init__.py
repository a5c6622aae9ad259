"""gpufleet: GPU fleet reliability analytics and goodput.

Data flows one way: sources -> store (landing tables) -> queries/*.sql ->
app, notebooks and exports. This package never imports Streamlit.
"""

__version__ = "0.1.0"
