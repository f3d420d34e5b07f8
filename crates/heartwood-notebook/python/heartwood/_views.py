"""What the notebook's calls return to show: plain data (a dict or a list, so scripts index it
and ``repr`` prints it as data) that renders as HTML in a notebook. The HTML is drawn by the
compiled module from the same value, when the call returns."""


class ShownDict(dict):
    """A dict that shows as HTML in a notebook (``_repr_html_``); ``repr`` is the dict's."""

    def __init__(self, data, html):
        super().__init__(data)
        self._html = html

    def _repr_html_(self):
        return self._html


class ShownList(list):
    """A list that shows as HTML in a notebook (``_repr_html_``); ``repr`` is the list's."""

    def __init__(self, data, html):
        super().__init__(data)
        self._html = html

    def _repr_html_(self):
        return self._html
