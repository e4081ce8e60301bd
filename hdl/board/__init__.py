"""The board side: the UART (:mod:`.uart`), the host protocol's blocks (:mod:`.host_parser`,
:mod:`.host_executor`, :mod:`.host_replier`, :mod:`.host_interface`), the filter behind it without pins
(:mod:`.filter_over_uart`) and the board tops (:mod:`.boards`). Nothing here is imported by ``apbbf.hdl`` itself
(the board tops import amaranth-boards): import the modules you use."""
