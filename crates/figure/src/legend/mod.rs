//! A line plot's legend: where it goes ([`place`]: a corner free of data, else a strip below
//! the axes) and how its entries are drawn ([`draw`]).

pub(crate) mod draw;
mod place;

pub(crate) use draw::{Entry, draw_legend_box, draw_legend_strip};
